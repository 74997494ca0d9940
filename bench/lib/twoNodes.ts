/**
 * What the mesh-path benchmarks (proxy, inference, MCP) share: a control plane that lets every node reach every
 * service, a router, node A and node B in this process, dialled straight to each other (as after discovery), with
 * an echo protocol on B, so each benchmark can time one bare stream open + 1 KiB echo between the same two hosts as
 * its baseline.
 */
import { performance } from "node:perf_hooks"
import type { Connection } from "@libp2p/interface"
import { Context, Effect, Logger, LogLevel, Scope } from "effect"
import type { ServiceSpec } from "../../src/domain/NodeFile.js"
import { MeshHost, type MeshHostService } from "../../src/services/mesh/MeshHost.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"

const ECHO = "/mesh/bench/echo/1.0.0"
const PAYLOAD = new Uint8Array(1024).map((_, i) => i % 251)

const POLICY = {
  roles: [{ name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["*"], allowed_targets: ["*"] }],
  bindings: [],
}

export const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? Number.NaN
}

/** `p50 … ms, p99 … ms` of a set of latencies. */
export const ms = (xs: ReadonlyArray<number>) =>
  `p50 ${percentile(xs, 0.5).toFixed(3)} ms, p99 ${percentile(xs, 0.99).toFixed(3)} ms`

export const quietly = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(effect.pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))

export interface TwoNodes {
  readonly a: NodeHarness.NodeHarness
  readonly aId: string
  readonly bId: string
  readonly hostA: MeshHostService
  readonly hostB: MeshHostService
  /** A's direct (unlimited) connection to B. */
  readonly connection: Connection
  /** Throws when A and B no longer talk over `connection`: figures taken meanwhile would mix paths. */
  readonly checkConnection: () => void
}

const memberHost = (node: NodeHarness.NodeHarness) =>
  Effect.flatMap(node.lifecycle.phase, (phase) =>
    phase._tag === "Member" ? Effect.succeed(Context.get(phase.context, MeshHost)) : Effect.dieMessage("not a member"),
  )

const directConnection = (from: MeshHostService, to: string): Connection => {
  const found = from.libp2p.getConnections().find((c) => c.remotePeer.toString() === to && c.limits === undefined)
  if (found === undefined) throw new Error("no direct connection between the nodes")
  return found
}

const file = (services: ReadonlyArray<ServiceSpec>, federate?: ReadonlyArray<string>) => ({
  labels: {},
  egress: { require_labels: {} },
  services,
  ...(federate === undefined ? {} : { federate }),
})

/** The mesh, living as long as `scope`, with A and B publishing the services given. */
export const make = async (
  scope: Scope.Scope,
  services: {
    readonly a?: ReadonlyArray<ServiceSpec>
    readonly b?: ReadonlyArray<ServiceSpec>
    /** What A federates (`federate:` patterns). */
    readonly federateOnA?: ReadonlyArray<string>
  },
): Promise<TwoNodes> => {
  const mesh = await quietly(
    Effect.gen(function* () {
      const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
      const policy = yield* MeshClient.json(cp.url, "POST", "/policies", cp.adminToken, POLICY)
      if (policy.status !== 200) return yield* Effect.dieMessage(`policy refused: ${policy.status}`)
      yield* RouterHarness.make(cp)
      const a = yield* NodeHarness.make(
        cp,
        services.a === undefined && services.federateOnA === undefined
          ? {}
          : { file: file(services.a ?? [], services.federateOnA) },
      )
      const b = yield* NodeHarness.make(cp, services.b === undefined ? {} : { file: file(services.b) })
      yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
      const hostA = yield* memberHost(a)
      const hostB = yield* memberHost(b)
      const direct = (yield* hostB.addresses).find((x) => x.includes("/tcp/") && !x.includes("p2p-circuit"))
      if (direct === undefined) return yield* Effect.dieMessage("node B has no TCP address")
      yield* hostA.dial(direct)
      return { a, hostA, hostB }
    }).pipe(Scope.extend(scope)),
  )
  await mesh.hostB.libp2p.handle(
    ECHO,
    async (stream) => {
      for await (const chunk of stream) stream.send(chunk)
      await stream.close()
    },
    { runOnLimitedConnection: true },
  )
  const bId = mesh.hostB.peerId
  const connection = directConnection(mesh.hostA, bId)
  return {
    ...mesh,
    aId: mesh.hostA.peerId,
    bId,
    connection,
    checkConnection: () => {
      if (directConnection(mesh.hostA, bId) !== connection) throw new Error("the direct connection changed")
    },
  }
}

/** One stream open + 1 KiB echo round trip over A's connection to B, in ms; throws when the echo comes back short. */
export const echo = async (mesh: TwoNodes): Promise<number> => {
  const started = performance.now()
  const stream = await mesh.connection.newStream(ECHO, { runOnLimitedConnection: true })
  stream.send(PAYLOAD)
  await stream.close()
  let received = 0
  for await (const chunk of stream) received += chunk.byteLength
  if (received !== PAYLOAD.byteLength) throw new Error("echo came back short")
  return performance.now() - started
}
