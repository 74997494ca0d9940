/**
 * A mesh that lives for simulated days in seconds: a control plane, a router and nodes in this process, all under
 * a JumpClock (test/support/JumpClock.ts: real time that the test moves forward in jumps), with the programs' own
 * durations (rotation 24h, grace 1h, credentials 24h, node sync 15m, router key sync and lease renewal 5m). Nodes B and C publish the demo MCP server
 * and the demo model; A calls both through the proxy and with `call_remote_tool`. Real libp2p, real HTTP, real
 * databases: only the clock is simulated. MESH_SOAK_PROGRESS=<file> appends a line per simulated hour to that file
 * (the record so far), to follow a long run.
 */
import { appendFileSync } from "node:fs"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect, Option, Redacted, type Scope, TestServices } from "effect"
import * as NodeConfig from "../../src/config/NodeConfig.js"
import * as RouterConfig from "../../src/config/RouterConfig.js"
import * as DemoInference from "../../src/demo/DemoInference.js"
import * as DemoMcpServer from "../../src/demo/DemoMcpServer.js"
import type * as NodeFile from "../../src/domain/NodeFile.js"
import type * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { tokenHeader } from "../node/support.js"
import { setPolicy } from "../support/admin.js"
import type * as JumpClock from "../support/JumpClock.js"

/** The programs' own settings, where the harnesses' are quicker. */
const NODE_DEFAULTS = NodeConfig.make({ dataDir: "", apiToken: Redacted.make("") })
const ROUTER_DEFAULTS = RouterConfig.make({ controlPlaneUrl: "" })

export const POLICY = {
  roles: [
    {
      name: "mesh:role:node",
      allowed_labels: ["*"],
      allowed_services: ["mcp://demo", "inference://demo"],
      allowed_targets: ["*"],
    },
  ],
  bindings: [],
}

/**
 * A call that gets no answer in this much real time failed: under TestClock a call that waits for one of the node's
 * own timeouts would otherwise wait forever, since the clock stands still while the test waits.
 */
const CALL_LIMIT_MS = 15_000

/** Real time, whatever clock the test runs under. */
export const pause = (millis: number) => TestServices.provideLive(Effect.sleep(Duration.millis(millis)))

/** Waits in real time for `condition`. */
export const settle = <E, R>(condition: Effect.Effect<boolean, E, R>, what: string, seconds = 120) =>
  Effect.gen(function* () {
    for (let i = 0; i < seconds * 10; i++) {
      if (yield* condition) return
      yield* pause(100)
    }
    return yield* Effect.dieMessage(`${what}: not within ${seconds} s of real time`)
  })

const demoServices = Effect.gen(function* () {
  const mcp = yield* DemoMcpServer.make(0)
  const inference = yield* DemoInference.make(0)
  const file: NodeFile.NodeFile = {
    labels: {},
    egress: { require_labels: {} },
    services: [
      { name: "demo", type: "mcp", description: "", target_url: mcp, env: {} },
      { name: "demo", type: "inference", description: "", target_url: inference, env: {} },
    ],
  }
  return file
})

/** A node with the node's own sync interval, in a data folder the caller may keep across restarts. */
export const node = (
  cp: ControlPlaneHarness.ControlPlaneHarness,
  options: { readonly file?: NodeFile.NodeFile; readonly dataDir?: string; readonly bootstrapToken?: string } = {},
) =>
  NodeHarness.make(cp, {
    ...(options.file === undefined ? {} : { file: options.file }),
    ...(options.bootstrapToken === undefined && options.dataDir !== undefined ? { enroll: false } : {}),
    overrides: {
      syncInterval: NODE_DEFAULTS.syncInterval,
      ...(options.dataDir === undefined
        ? {}
        : { dataDir: options.dataDir, socketPath: Option.some(NodeConfig.socketPathIn(options.dataDir)) }),
    },
  })

export interface Soak {
  readonly cp: ControlPlaneHarness.ControlPlaneHarness
  readonly a: NodeHarness.NodeHarness
  readonly b: NodeHarness.NodeHarness
  readonly c: NodeHarness.NodeHarness
  readonly bId: string
  readonly cId: string
  readonly agent: Client
}

/**
 * The mesh of the soak tests, up and connected, with an MCP client on A. The router may enroll with another replica
 * of the control plane than the nodes do.
 */
export const mesh = (
  cp: ControlPlaneHarness.ControlPlaneHarness,
  routerCp: ControlPlaneHarness.ControlPlaneHarness = cp,
): Effect.Effect<Soak, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    yield* setPolicy(cp, POLICY)
    yield* RouterHarness.make(routerCp, {
      keysSyncInterval: ROUTER_DEFAULTS.keysSyncInterval,
      leaseRenewInterval: ROUTER_DEFAULTS.leaseRenewInterval,
    })
    const b = yield* node(cp, { file: yield* demoServices })
    const c = yield* node(cp, { file: yield* demoServices })
    const a = yield* node(cp)
    yield* settle(allConnected([a, b, c]), "the nodes connect")
    const bId = yield* memberId(b)
    const cId = yield* memberId(c)
    const agent = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new Client({ name: "soak", version: "1.0.0" })
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { requestInit: { headers: tokenHeader(a) } }),
        )
        return client
      }),
      (client) => Effect.promise(() => client.close().catch(() => undefined)),
    )
    const soak = { cp, a, b, c, bId, cId, agent }
    // A finds both providers before the clock starts to run.
    yield* settle(
      Effect.map(calls(soak), (failures) => failures.length === 0),
      "A reaches B and C",
    )
    return soak
  })

export const memberId = (n: NodeHarness.NodeHarness) =>
  Effect.flatMap(n.lifecycle.phase, (p) =>
    p._tag === "Member" ? Effect.succeed(p.peerId) : Effect.dieMessage("not a member"),
  )

export const allConnected = (nodes: ReadonlyArray<NodeHarness.NodeHarness>) =>
  Effect.map(
    Effect.forEach(nodes, (n) => n.lifecycle.connected),
    (all) => all.every(Boolean),
  )

const proxied = (a: NodeHarness.NodeHarness, peer: string) =>
  Effect.promise(() =>
    fetch(`${a.url}/mesh/${peer}/inference/demo/v1/models`, {
      headers: tokenHeader(a),
      signal: AbortSignal.timeout(CALL_LIMIT_MS),
    }).then(
      async (r) => ({ ok: r.status === 200 && (await r.text()).includes(DemoInference.MODEL), status: r.status }),
      () => ({ ok: false, status: -1 }),
    ),
  )

const toolCall = (agent: Client, peer: string) =>
  Effect.promise(() =>
    (
      agent.callTool(
        {
          name: "call_remote_tool",
          arguments: { peer_id: peer, tool_name: "mcp://demo/word_count", arguments: { text: "one two three" } },
        },
        undefined,
        { timeout: CALL_LIMIT_MS },
      ) as Promise<CallToolResult>
    ).then(
      (result) => ({ ok: result.isError !== true && JSON.stringify(result.content).includes("3 words"), status: 0 }),
      () => ({ ok: false, status: -1 }),
    ),
  )

/** A's four calls (proxy and tool, to B and to C); the failed ones, described. */
export const calls = (soak: Omit<Soak, "cp">) =>
  Effect.gen(function* () {
    const failures: Array<string> = []
    for (const [peer, name] of [
      [soak.bId, "B"],
      [soak.cId, "C"],
    ] as const) {
      const viaProxy = yield* proxied(soak.a, peer)
      if (!viaProxy.ok) failures.push(`proxy to ${name}: ${viaProxy.status}`)
      const viaTool = yield* toolCall(soak.agent, peer)
      if (!viaTool.ok) failures.push(`call_remote_tool on ${name}`)
    }
    return failures
  })

export interface Record {
  readonly failures: Array<string>
  readonly disconnected: Array<string>
}

/**
 * Moves the clock `total` in `step`s; after each step lets the woken fibers do their I/O, then A makes its calls and
 * every node says whether it is connected. Returns what failed, with the simulated time.
 */
export const run = (
  clock: JumpClock.JumpClock,
  soak: Omit<Soak, "cp">,
  total: Duration.Duration,
  step: Duration.Duration,
): Effect.Effect<Record> =>
  Effect.gen(function* () {
    const record: Record = { failures: [], disconnected: [] }
    const steps = Math.round(Duration.toMillis(total) / Duration.toMillis(step))
    const perDay = Math.round(86_400_000 / Duration.toMillis(step))
    for (let i = 0; i < steps; i++) {
      const progress = process.env.MESH_SOAK_PROGRESS
      if (progress !== undefined && i % Math.max(1, Math.round(perDay / 24)) === 0) {
        appendFileSync(
          progress,
          `${new Date().toISOString()} step ${i}/${steps}: ${JSON.stringify(record).slice(0, 500)}\n`,
        )
      }
      yield* clock.jump(step)
      yield* pause(20)
      const at = `${(((i + 1) * Duration.toMillis(step)) / 3_600_000).toFixed(2)}h`
      for (const failure of yield* calls(soak)) record.failures.push(`${at}: ${failure}`)
      for (const [name, n] of [
        ["A", soak.a],
        ["B", soak.b],
        ["C", soak.c],
      ] as const) {
        if (!(yield* n.lifecycle.connected)) record.disconnected.push(`${at}: ${name}`)
      }
    }
    return record
  })
