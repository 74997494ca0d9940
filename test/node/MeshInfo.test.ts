/** The MCP tool `get_mesh_info` (spec 4.9): each field, against what the node's own mesh host holds. */
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Effect } from "effect"
import * as LeaseRenewal from "../../src/layers/router/LeaseRenewal.js"
import { MeshHost } from "../../src/services/mesh/MeshHost.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { socketFetch } from "../../src/testing/SocketFetch.js"
import { eventually } from "./support.js"

interface MeshInfo {
  readonly peer_id: string
  readonly router_peer_id: string | null
  readonly connected_peers: number
  readonly dht_size: number
  readonly local_api_socket: string | null
}

describe("get_mesh_info", () => {
  it.live("names this node, its router, its transport connections, its DHT table's size and its socket", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        const router = yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp)
        const other = yield* NodeHarness.make(cp)
        yield* Effect.all([node.connected, other.connected], { concurrency: "unbounded" })
        const phase = yield* node.lifecycle.phase
        if (phase._tag !== "Member") return yield* Effect.dieMessage("the node is not a member")
        const host = Context.get(phase.context as Context.Context<MeshHost>, MeshHost)
        const client = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new Client({ name: "info-agent", version: "1.0.0" })
            await client.connect(
              new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), {
                fetch: socketFetch(node.socketPath),
              }),
            )
            return client
          }),
          (client) => Effect.promise(() => client.close()),
        )
        const info = Effect.map(
          Effect.promise(() => client.callTool({ name: "get_mesh_info", arguments: {} })),
          (result) => result.structuredContent as unknown as MeshInfo,
        )
        // The router first; then a direct connection to the other node, made here, shows in connected_peers.
        expect(yield* info).toMatchObject({
          peer_id: yield* node.peerId,
          router_peer_id: router.peerId,
          connected_peers: 1,
          local_api_socket: node.socketPath,
        })
        const otherHost = Context.get(
          ((yield* other.lifecycle.phase) as { context: Context.Context<MeshHost> }).context,
          MeshHost,
        )
        const direct = (yield* otherHost.addresses).find((a) => a.includes("/tcp/") && !a.includes("p2p-circuit"))
        yield* host.dial(direct ?? "")
        const both = yield* eventually(10, info, (i) => i.connected_peers === 2)
        // dht_size counts routing-table entries, not connections: it is the table's own size.
        expect(both.dht_size).toBe(LeaseRenewal.dhtSize(host))
        expect(Number.isInteger(both.dht_size)).toBe(true)
      }),
    ),
  )
})
