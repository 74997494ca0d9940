/** `get_mesh_info`: this node's place in the mesh. */
import { Effect, Option } from "effect"
import { z } from "zod"
import { NodeConfig } from "../../../config/NodeConfig.js"
import { ROUTER_ROLE } from "../../../domain/Policy.js"
import { MeshHost } from "../../../services/mesh/MeshHost.js"
import * as LeaseRenewal from "../../router/LeaseRenewal.js"
import * as Tool from "../Tool.js"

export const tool = Tool.make({
  name: "get_mesh_info",
  title: "Mesh status of this node",
  description:
    "This node's peer id, the router it is connected through, how many peers it has transport connections to " +
    "(connected_peers) and how many entries its DHT routing table holds (dht_size) — two different measures — " +
    "and the Unix socket of the local API, if any.",
  input: {},
  output: {
    peer_id: z.string(),
    router_peer_id: z.string().nullable(),
    connected_peers: z.number().int(),
    dht_size: z.number().int(),
    local_api_socket: z.string().nullable(),
  },
  run: () =>
    Effect.gen(function* () {
      const host = yield* MeshHost
      const settings = yield* NodeConfig
      const router = (yield* host.peers).find((p) => p.role === ROUTER_ROLE)
      const connected = new Set(host.libp2p.getConnections().map((c) => c.remotePeer.toString()))
      return Tool.ok({
        peer_id: host.peerId,
        router_peer_id: router?.peerId ?? null,
        connected_peers: connected.size,
        dht_size: LeaseRenewal.dhtSize(host),
        local_api_socket: Option.getOrNull(settings.socketPath),
      })
    }),
})
