/** What the remote tools check of a `peer_id` argument before they reach out: a peer id, and not this node's. */
import { Effect, Option } from "effect"
import * as PeerKey from "../../../domain/PeerKey.js"
import { MeshHost } from "../../../services/mesh/MeshHost.js"

/** Why the peer id cannot be used, if it cannot. */
export const refusal = (peerId: string): Effect.Effect<Option.Option<string>, never, MeshHost> =>
  Effect.map(MeshHost, (host) => {
    if (!PeerKey.isPeerId(peerId)) return Option.some("peer_id is not a peer id")
    if (peerId === host.peerId) {
      return Option.some(
        "peer_id is this node's own peer id: its services are listed by list_local_services and used directly, " +
          "not through the mesh",
      )
    }
    return Option.none()
  })
