/**
 * Every binary stops on SIGTERM (init systems, containers) and SIGINT (Ctrl-C) within 10 seconds with exit code 0,
 * even with a request in flight: the request finishes if it can within the grace, else its connection is cut.
 * These run the entry points as processes; the 10 seconds are the operator's requirement, measured in real time.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort } from "../../src/testing/Ports.js"
import * as TestDatabase from "../../src/testing/TestDatabase.js"
import * as ControlPlaneProcess from "../scale/ControlPlaneProcess.js"
import { describeDatabases } from "../support/databases.js"
import { nodeArgs } from "../support/processes.js"
import * as Raw from "../support/rawHttp.js"

/** What an init system waits before it sends SIGKILL. */
const STOP_BOUND_MS = 10_000

/** Sends `text` and no more: the server holds the request in flight until the rest comes or the connection goes. */
const hold = async (url: string, text: string) => {
  const socket = await Raw.open(url)
  const outcome = Raw.answerOf(socket, 30_000)
  socket.write(text)
  // Let the server read what was sent before the signal comes.
  await new Promise((resolve) => setTimeout(resolve, 300))
  return { socket, outcome }
}

/** A POST whose body stops halfway. */
const holdRequest = (url: string, target: string, bearer = "") =>
  hold(
    url,
    `${Raw.head({
      method: "POST",
      target,
      headers: {
        "content-type": "application/json",
        "content-length": "25",
        ...(bearer === "" ? {} : { authorization: `Bearer ${bearer}` }),
      },
    })}{"role"`,
  )

/** A GET whose headers never end. */
const holdHeaders = (url: string, target: string) => hold(url, `GET ${target} HTTP/1.1\r\nhost: localhost\r\n`)

interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly afterMs: number
}

/** Sends `signal` and waits for the exit (SIGKILL after 20 s, so a stuck process fails the test instead of hanging). */
const signalAndWait = (child: ChildProcess, signal: NodeJS.Signals): Promise<Exit> =>
  new Promise((resolve) => {
    const sent = Date.now()
    const killer = setTimeout(() => child.kill("SIGKILL"), 20_000)
    child.once("exit", (code, exitSignal) => {
      clearTimeout(killer)
      resolve({ code, signal: exitSignal, afterMs: Date.now() - sent })
    })
    child.kill(signal)
  })

const children: Array<ChildProcess> = []
const startBin = (name: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) => {
  const child = spawn(process.execPath, nodeArgs(name, args), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stdout?.on("data", (c: Buffer) => {
    output += c.toString()
  })
  child.stderr?.on("data", (c: Buffer) => {
    output += c.toString()
  })
  children.push(child)
  return { child, output: () => output }
}

const waitFor = async <A>(what: string, attempt: () => Promise<A | undefined>, tries = 300): Promise<A> => {
  for (let i = 0; i < tries; i++) {
    const value = await attempt().catch(() => undefined)
    if (value !== undefined) return value
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

const stopsCleanly = (exit: Exit) => {
  expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null })
  expect(exit.afterMs).toBeLessThan(STOP_BOUND_MS)
}

describeDatabases("mesh-control-plane stops", (db) => {
  it.scopedLive("on SIGTERM with a request in flight: exit 0 within 10 s, the held request cut", () =>
    Effect.gen(function* () {
      const cp = yield* ControlPlaneProcess.start({ database: yield* db.freshShared })
      const held = yield* Effect.promise(() => holdRequest(cp.url, "/admin/bootstrap-tokens", cp.adminToken))
      const sent = Date.now()
      process.kill(cp.pid, "SIGTERM")
      const exit = yield* cp.exited
      stopsCleanly({ ...exit, afterMs: Date.now() - sent })
      expect((yield* Effect.promise(() => held.outcome))._tag).toBe("closed")
    }),
  )

  it.scopedLive("on SIGINT with a request in flight that completes in the grace: it is answered, then exit 0", () =>
    Effect.gen(function* () {
      const cp = yield* ControlPlaneProcess.start({ database: yield* db.freshShared })
      const held = yield* Effect.promise(() => holdRequest(cp.url, "/admin/bootstrap-tokens", cp.adminToken))
      const sent = Date.now()
      process.kill(cp.pid, "SIGINT")
      yield* Effect.sleep("500 millis")
      // Stopped listening: a new client is refused, while the request in flight goes on.
      const fresh = yield* Effect.promise(() =>
        fetch(`${cp.url}/healthz`).then(
          (r) => r.status,
          () => "refused",
        ),
      )
      expect(fresh).toBe("refused")
      held.socket.write(':"mesh:role:node"}')
      const answer = Raw.expectAnswer(yield* Effect.promise(() => held.outcome))
      expect([answer.status, answer.headers["cache-control"]]).toEqual([201, "no-store"])
      const exit = yield* cp.exited
      stopsCleanly({ ...exit, afterMs: Date.now() - sent })
    }),
  )
})

describe("the other binaries stop", () => {
  const dir = mkdtempSync(join(tmpdir(), "mesh-stopping-test-"))
  afterAll(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  })

  it.scopedLive("mesh-router, on SIGTERM and on SIGINT, each with a request in flight on its metrics listener", () =>
    Effect.gen(function* () {
      const cp = yield* ControlPlaneProcess.start({
        database: yield* TestDatabase.sqliteFile,
        flags: ["--auto-approve-enrollment"],
      })
      const minted = yield* Effect.promise(() =>
        fetch(`${cp.url}/admin/bootstrap-tokens`, {
          method: "POST",
          headers: { authorization: `Bearer ${cp.adminToken}`, "content-type": "application/json" },
          body: JSON.stringify({ role: "mesh:role:router" }),
        }).then((r) => r.json() as Promise<{ token: string }>),
      )
      const tokenFile = join(dir, "router-token")
      writeFileSync(tokenFile, `${minted.token}\n`, { mode: 0o600 })
      for (const [signal, token] of [
        ["SIGTERM", ["--bootstrap-token-path", tokenFile]],
        ["SIGINT", []],
      ] as const) {
        const metricsPort = yield* Effect.promise(freePort)
        const metrics = `http://127.0.0.1:${metricsPort}`
        const router = startBin("mesh-router", [
          "--control-plane",
          cp.url,
          "--listen",
          "/ip4/127.0.0.1/tcp/0",
          "--data-dir",
          join(dir, "router"),
          ...token,
          "--metrics-addr",
          `127.0.0.1:${metricsPort}`,
          "--log-level",
          "warn",
        ])
        yield* Effect.promise(() =>
          waitFor(`router ready (${router.output()})`, async () =>
            (await fetch(`${metrics}/readyz`)).ok ? true : undefined,
          ),
        )
        const held = yield* Effect.promise(() => holdHeaders(metrics, "/metrics"))
        const exit = yield* Effect.promise(() => signalAndWait(router.child, signal))
        stopsCleanly(exit)
        expect((yield* Effect.promise(() => held.outcome))._tag, signal).toBe("closed")
      }
    }),
  )

  it.scopedLive("mesh-node join, on SIGTERM and on SIGINT, while its request to the control plane is in flight", () =>
    Effect.gen(function* () {
      // A control plane that accepts connections and never answers: join's request stays in flight.
      const accepted: Array<Socket> = []
      const stalled = createServer((socket) => {
        accepted.push(socket)
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => stalled.listen(0, "127.0.0.1", resolve))),
        () =>
          Effect.sync(() => {
            for (const socket of accepted) socket.destroy()
            stalled.close()
          }),
      )
      const port = (stalled.address() as { port: number }).port
      const tokenFile = join(dir, "node-token")
      writeFileSync(tokenFile, "mesh-bt-00000000000000000000000000000000\n", { mode: 0o600 })
      for (const signal of ["SIGTERM", "SIGINT"] as const) {
        const before = accepted.length
        const node = startBin("mesh-node", [
          "join",
          "--control-plane",
          `http://127.0.0.1:${port}`,
          "--data-dir",
          join(dir, `node-${signal}`),
          "--bootstrap-token-path",
          tokenFile,
          "--log-level",
          "warn",
        ])
        yield* Effect.promise(() =>
          waitFor(`join's request (${node.output()})`, async () => (accepted.length > before ? true : undefined)),
        )
        const exit = yield* Effect.promise(() => signalAndWait(node.child, signal))
        stopsCleanly(exit)
      }
    }),
  )

  it.scopedLive(
    "mesh-one, on SIGTERM and on SIGINT, each with a request in flight on its control plane",
    () =>
      Effect.gen(function* () {
        const data = join(dir, "mesh-one")
        for (const signal of ["SIGTERM", "SIGINT"] as const) {
          const one = startBin("mesh-one", [
            "--data-dir",
            data,
            "--port",
            "0",
            "--issuer-port",
            "0",
            "--router-port",
            "0",
            "--node-port",
            "0",
            "--node-b-port",
            "0",
            "--demo-mcp-port",
            "0",
            "--demo-inference-port",
            "0",
          ])
          const url = yield* Effect.promise(() =>
            waitFor(
              `mesh-one banner (${one.output()})`,
              async () =>
                one.output().includes("Press Ctrl-C")
                  ? /control plane\s+(http:\/\/\S+)/.exec(one.output())?.[1]
                  : undefined,
              600,
            ),
          )
          const adminToken = readFileSync(join(data, "admin-token"), "utf8").trim()
          const held = yield* Effect.promise(() => holdRequest(url, "/admin/bootstrap-tokens", adminToken))
          const exit = yield* Effect.promise(() => signalAndWait(one.child, signal))
          stopsCleanly(exit)
          expect((yield* Effect.promise(() => held.outcome))._tag, signal).toBe("closed")
        }
      }),
    // mesh-one starts a whole mesh (a control plane, a router, two nodes, two demo backends), twice: on a loaded
    // machine each start takes tens of seconds.
    150_000,
  )
})
