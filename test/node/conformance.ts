/**
 * Running the MCP conformance suites against a URL and reading their results: the 2025 suite (0.1.16, `--suite
 * active`) and the 2026-07-28 one (0.2.0-alpha.12, `--requirements 2026-07-28`), with the fixture servers they run
 * against (`test/support/mcpFixtureServer.mjs`, 2025 era with the suite's fixture tools;
 * `test/support/mcpModernServer.mjs`, 2026-07-28 only) and a forwarder that adds a node's API token, since the
 * suites' clients send none.
 */
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { createServer, request } from "node:http"
import type { AddressInfo } from "node:net"
import { dirname, join } from "node:path"
import { Effect, type Scope } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import { freePort } from "../../src/testing/Ports.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { eventually, mcpInitialize } from "./support.js"

const root = join(import.meta.dirname, "..", "..")
const SUITES = {
  "2025": join(root, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
  "2026": join(root, "node_modules", "@modelcontextprotocol", "conformance-next", "dist", "index.js"),
}

/** A fixture server (a `.mjs` under test/support) on a free loopback port, at `/mcp`; stopped with the scope. */
export const fixture = (
  script: "mcpFixtureServer.mjs" | "mcpModernServer.mjs",
): Effect.Effect<{ readonly url: string }, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const port = yield* Effect.promise(freePort)
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [join(root, "test", "support", script)], {
          cwd: root,
          env: { ...process.env, PORT: String(port) },
          stdio: ["ignore", "pipe", "pipe"],
        }),
      ),
      (child) => Effect.sync(() => child.kill("SIGTERM")),
    )
    yield* Effect.async<void, Error>((resume) => {
      let seen = ""
      const onData = (chunk: Buffer) => {
        seen += chunk.toString("utf8")
        if (/listening on port/.test(seen)) resume(Effect.void)
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", onData)
      child.once("exit", (code) => resume(Effect.fail(new Error(`${script} exited (${code}): ${seen.slice(-500)}`))))
    }).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error(`${script} did not start`) }))
    return { url: `http://127.0.0.1:${port}/mcp` }
  })

/**
 * A loopback HTTP server passing every request to `target` with the node's API token added; stopped with the scope.
 * Requests reach the node in the order they reach the forwarder, as over an agent's own connections: each goes on a
 * connection of its own, opened once the previous request's connection is up. Opened at once, or taken from a pool
 * of kept-alive ones, a later request's connection could be ready first, and a 2025 client's tool call would
 * overtake the GET stream it opened just before (the server's sampling request, sent on that stream, then lost:
 * seen here in about one run of two of the 2025 suite).
 */
export const tokenForwarder = (target: URL, apiToken: string) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.async<ReturnType<typeof createServer>>((resume) => {
        let previous: Promise<void> = Promise.resolve()
        const server = createServer((req, res) => {
          previous = previous.then(
            () =>
              new Promise<void>((connected) => {
                const upstream = request(
                  {
                    hostname: target.hostname,
                    port: target.port,
                    method: req.method,
                    path: req.url,
                    headers: { ...req.headers, "x-mesh-authentication": `Bearer ${apiToken}` },
                    agent: false,
                  },
                  (answer) => {
                    res.writeHead(answer.statusCode ?? 502, answer.headers)
                    answer.pipe(res)
                  },
                )
                upstream.once("socket", (socket) => socket.once("connect", () => connected()))
                upstream.on("error", () => {
                  connected()
                  res.destroy()
                })
                res.on("close", () => upstream.destroy())
                req.pipe(upstream)
              }),
          )
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        }),
    ),
    (server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  )

export interface Check {
  readonly scenario: string
  readonly id: string
  readonly status: string
  readonly errorMessage?: string
}

export interface Run {
  readonly scenarios: number
  readonly checks: ReadonlyArray<Check>
  readonly output: string
}

/**
 * Runs a suite against `url` to its end (asynchronously: the nodes it tests may run in this process) and reads the
 * checks each scenario left in `server-<scenario>-<timestamp>/checks.json`.
 */
export const run = (suite: "2025" | "2026", url: string, args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const dir = yield* NodeHarness.tempDir
    const output = yield* Effect.async<string>((resume) => {
      const child = spawn(process.execPath, [SUITES[suite], "server", "--url", url, ...args, "-o", dir], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      })
      let output = ""
      child.stdout.on("data", (chunk) => {
        output += chunk
      })
      child.stderr.on("data", (chunk) => {
        output += chunk
      })
      child.once("exit", () => resume(Effect.succeed(output)))
      return Effect.sync(() => child.kill("SIGTERM"))
    })
    const checks = readdirSync(dir, { recursive: true })
      .map(String)
      .filter((file) => file.endsWith("checks.json"))
      .flatMap((file) => {
        const scenario = dirname(file)
          .replace(/^server-/, "")
          .replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "")
        return (
          JSON.parse(readFileSync(join(dir, file), "utf8")) as Array<{
            id: string
            status: string
            errorMessage?: string
          }>
        ).map(
          (check): Check => ({
            scenario,
            id: check.id,
            status: check.status,
            ...(check.errorMessage === undefined ? {} : { errorMessage: check.errorMessage.slice(0, 300) }),
          }),
        )
      })
    const scenarios = Number(/\((\d+) scenarios\)/.exec(output)?.[1] ?? new Set(checks.map((c) => c.scenario)).size)
    return { scenarios, checks, output } satisfies Run
  })

/** A check as `scenario: id: status`. */
export const key = (check: Check) => `${check.scenario}: ${check.id}: ${check.status}`

/** The scenarios that left checks and none of them failed. */
export const passing = (run: Run) => {
  const failed = new Set(run.checks.filter((check) => check.status === "FAILURE").map((check) => check.scenario))
  return [...new Set(run.checks.map((check) => check.scenario))].filter((scenario) => !failed.has(scenario)).sort()
}

/** The scenarios with a failed check, each with its failed checks. */
export const failing = (run: Run) =>
  run.checks
    .filter((check) => check.status === "FAILURE")
    .map((check) => `${check.scenario}: ${check.id}: ${check.errorMessage ?? ""}`)

export const tally = (run: Run) => {
  const passed = run.checks.filter((check) => check.status === "SUCCESS").length
  const failed = run.checks.filter((check) => check.status === "FAILURE").length
  return `${passing(run).length}/${run.scenarios} scenarios pass; checks ${passed} passed, ${failed} failed`
}

const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["mcp://fixture"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

/** B publishing the server at `url` as `mcp://fixture`, A calling it; the proxy path through A, once B has the policy. */
export const meshTo = (url: string) =>
  Effect.gen(function* () {
    const cp = yield* Harness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [{ name: "fixture", type: "mcp", description: "", target_url: url, env: {} }],
      },
    })
    const a = yield* NodeHarness.make(cp)
    yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
    const path = `/mesh/${yield* b.peerId}/mcp/fixture`
    // A holds B's policy-checked route once B has the policy: the first request that is not refused.
    yield* eventually(
      60,
      Effect.promise(() =>
        fetch(`${a.url}${path}`, {
          method: "POST",
          headers: {
            "x-mesh-authentication": `Bearer ${a.apiToken}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify(mcpInitialize),
        }).then((r) => r.body?.cancel().then(() => r.status) ?? r.status),
      ),
      (status) => status !== 403 && status !== 502,
    )
    return { a, b, path, url: `${yield* tokenForwarder(new URL(a.url), a.apiToken)}${path}` }
  })
