/**
 * What the mesh-path benchmarks (proxy, inference, MCP) share: a mesh of real processes on loopback (a control plane
 * that lets every node reach every service, a router, node A and node B, each `mesh-node run` or `mesh-router` from
 * source, as test/scale runs them), so A, B and the benchmark's client each have an event loop of their own. The
 * client talks to A over A's Unix socket, as an agent on A's machine does. A has found B's services (discovery also
 * tells it B's addresses), so it reaches B over a direct connection.
 *
 * With `relayed`, two more nodes, C (as A) and D (as B), each announcing only an address where nothing listens:
 * they reach each other only through the router's relay.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Duration, Effect, type Scope } from "effect"
import * as Local from "../../test/scale/LocalApi.js"
import { poll } from "../../test/scale/Requests.js"
import * as Topology from "../../test/scale/Topology.js"

export interface Options {
  /** mesh-node.yaml service entries (`  - { name: …, type: …, target_url: … }`) of A, and of B. */
  readonly a?: ReadonlyArray<string>
  readonly b?: ReadonlyArray<string>
  /** What A federates (`federate:` patterns). */
  readonly federateOnA?: ReadonlyArray<string>
  /** Services of B (type, name) that A must have discovered before measuring (which tells A B's addresses). */
  readonly discover: ReadonlyArray<readonly [string, string]>
  /** Two more nodes C → D (D with B's services) that reach each other only through the router's relay. */
  readonly relayed?: boolean
  /** Environment of every node (`MESH_V8_FLAGS`, to compare V8 settings). */
  readonly nodeEnv?: Readonly<Record<string, string>>
}

export interface Pair {
  /** The caller, reached over its socket. */
  readonly from: Topology.Node
  readonly fromId: string
  readonly to: Topology.Node
  readonly toId: string
  /** `fetch` over the caller's socket. */
  readonly fetch: typeof globalThis.fetch
  /** The caller's paths to its peer now (`direct`, `relayed`); fails unless every one is `expected`. */
  readonly check: (expected: "direct" | "relayed") => Effect.Effect<ReadonlyArray<string>, Error>
}

export interface MeshNodes {
  readonly direct: Pair
  readonly relayed?: Pair
}

/** One service line of mesh-node.yaml. */
export const service = (type: "inference" | "mcp", name: string, url: string) =>
  `  - { name: ${name}, type: ${type}, target_url: '${url}' }`

const config = (services: ReadonlyArray<string> = [], federate?: ReadonlyArray<string>) =>
  [
    "labels: {}",
    ...(services.length === 0 ? [] : ["services:", ...services]),
    ...(federate === undefined ? [] : ["federate:", ...federate.map((f) => `  - '${f}'`)]),
    "",
  ].join("\n")

const pathsOf = (node: Topology.Node, peer: string) =>
  Local.json<{ peer?: { paths?: ReadonlyArray<string> } }>(node, `/debug/connectivity?peer=${peer}`).pipe(
    Effect.map((info) => info.peer?.paths ?? []),
  )

/** The mesh, living as long as the scope (its processes stopped, its folder removed). */
export const make = (options: Options): Effect.Effect<MeshNodes, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const folder = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-bench-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
    )
    const cp = yield* Topology.controlPlane({ folder })
    yield* Topology.router(cp, folder, "router")
    // What C and D tell the mesh instead of their own address: port 1 on loopback, where nothing listens (a port
    // freed for the purpose could be given to one of the nodes' own listeners).
    const hidden = (name: string, services?: ReadonlyArray<string>) => ({
      name,
      config: config(services),
      extraArgs: ["--external-addr", "/ip4/127.0.0.1/tcp/1"],
    })
    const specs = [
      { name: "a", config: config(options.a, options.federateOnA), extraArgs: [] as Array<string> },
      { name: "b", config: config(options.b), extraArgs: [] as Array<string> },
      ...(options.relayed === true ? [hidden("c"), hidden("d", options.b)] : []),
    ]
    const nodes = yield* Effect.all(
      specs.map((spec) =>
        Topology.node(cp, folder, spec.name, {
          config: spec.config,
          extraArgs: spec.extraArgs,
          ...(options.nodeEnv === undefined ? {} : { env: options.nodeEnv }),
        }),
      ),
      { concurrency: "unbounded" },
    )
    const ids = yield* Effect.all(
      nodes.map((node) => Topology.peerIdOf(node)),
      { concurrency: "unbounded" },
    )
    const pair = (i: number): Pair => {
      const from = nodes[i] as Topology.Node
      const to = nodes[i + 1] as Topology.Node
      const toId = ids[i + 1] as string
      return {
        from,
        fromId: ids[i] as string,
        to,
        toId,
        fetch: Local.fetchFor(from),
        check: (expected) =>
          Effect.flatMap(pathsOf(from, toId), (paths) =>
            paths.length > 0 && paths.every((p) => p === expected)
              ? Effect.succeed(paths)
              : Effect.fail(
                  new Error(`${from.name} reached ${to.name} over ${paths.join(", ") || "nothing"}, not ${expected}`),
                ),
          ),
      }
    }
    const pairs = { direct: pair(0), ...(options.relayed === true ? { relayed: pair(2) } : {}) }
    // C is not made to discover D: its first request reaches D through the relay (the router's), D's announced
    // address leading nowhere.
    yield* Effect.all(
      options.discover.map(([type, name]) =>
        poll(Topology.discover(pairs.direct.from, type, name), (found) => found.includes(pairs.direct.toId), {
          what: `A discovers ${type}/${name} on B`,
          timeout: Duration.seconds(90),
          interval: Duration.millis(500),
        }),
      ),
      { concurrency: "unbounded" },
    )
    return pairs
  })
