import { spawn } from "node:child_process"
import { readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import { freePort } from "../../src/testing/Ports.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { eventually } from "../node/support.js"
import { nodeArgs, runBin } from "../support/processes.js"

/** `mesh-node run` as a child process for the life of the scope; stopped with SIGTERM, its exit code recorded. */
const runNode = (args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, nodeArgs("mesh-node", ["run", ...args]), {
        stdio: ["ignore", "pipe", "pipe"],
      })
      let stderr = ""
      child.stderr.on("data", (chunk) => {
        stderr += chunk
      })
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, exited, stderr: () => stderr }
    }),
    ({ child, exited }) =>
      Effect.promise(() => {
        if (child.exitCode === null) child.kill("SIGTERM")
        return exited
      }),
  )

describe("mesh-node run command line", () => {
  it.live("a bad configuration file stops it with exit 2 and one line naming the key", () =>
    Effect.gen(function* () {
      const dir = yield* NodeHarness.tempDir
      const config = join(dir, "mesh-node.yaml")
      writeFileSync(config, "services:\n  - name: files\n    type: ftp\n    target_url: http://127.0.0.1:1\n")
      const bad = yield* Effect.promise(() =>
        runBin("mesh-node", ["run", "--data-dir", dir, "--control-plane", "http://127.0.0.1:1"]),
      )
      expect(bad.status).toBe(2)
      expect(bad.stderr.trim().split("\n")).toEqual([
        `mesh-node: ${config}: services[0].type: must be one of mcp, inference, a2a`,
      ])
      writeFileSync(config, "lables:\n  zone: eu\n")
      const typo = yield* Effect.promise(() => runBin("mesh-node", ["run", "--data-dir", dir]))
      expect(typo.status).toBe(2)
      expect(typo.stderr).toContain("lables: is unexpected")
    }).pipe(Effect.scoped),
  )

  it.live(
    "enrolls with a bootstrap token file, serves its API with the token it wrote 0600, tells peers its --external-addr, and stops on SIGTERM with 0",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const cp = yield* Harness.make({ autoApproveEnrollment: true })
          yield* RouterHarness.make(cp)
          const dir = yield* NodeHarness.tempDir
          const tokenFile = join(dir, "bootstrap-token")
          writeFileSync(tokenFile, yield* NodeHarness.nodeToken(cp), { mode: 0o600 })
          const port = yield* Effect.promise(freePort)
          const node = yield* runNode([
            "--control-plane",
            cp.url,
            "--data-dir",
            join(dir, "node"),
            "--bootstrap-token-path",
            tokenFile,
            "--bind-addr",
            `127.0.0.1:${port}`,
            "--listen",
            "/ip4/127.0.0.1/tcp/0",
            "--external-addr",
            "/ip4/192.0.2.7/tcp/4999",
            "--log-level",
            "warn",
          ])
          const tokenPath = join(dir, "node", "api-token")
          const apiToken = yield* eventually(
            30,
            Effect.sync(() => {
              try {
                return readFileSync(tokenPath, "utf8").trim()
              } catch {
                return ""
              }
            }),
            (t) => t.length > 0,
          )
          expect(statSync(tokenPath).mode & 0o777).toBe(0o600)
          const ready = yield* eventually(
            60,
            Effect.promise(() =>
              fetch(`http://127.0.0.1:${port}/debug/mesh-info`, {
                headers: { "x-mesh-authentication": `Bearer ${apiToken}` },
              })
                .then((r) => r.json() as Promise<{ connected?: boolean }>)
                .catch(() => ({ connected: false })),
            ),
            (info) => info.connected === true,
          )
          expect(ready.connected).toBe(true)
          // Peers learn the external address only, not the listen address behind it.
          const network = yield* Effect.promise(() =>
            fetch(`http://127.0.0.1:${port}/debug/network-info`, {
              headers: { "x-mesh-authentication": `Bearer ${apiToken}` },
            }).then((r) => r.json() as Promise<{ addresses?: ReadonlyArray<string> }>),
          )
          expect(network.addresses?.map((a) => a.replace(/\/p2p\/.*$/, ""))).toEqual(["/ip4/192.0.2.7/tcp/4999"])
          expect(node.stderr()).not.toContain(apiToken)
          node.child.kill("SIGTERM")
          expect(yield* Effect.promise(() => node.exited)).toBe(0)
        }),
      ),
  )
})
