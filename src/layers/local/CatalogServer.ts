/**
 * The provider side of `/mesh/catalog/1.0.0`: any authenticated peer may ask which services this node publishes
 * (names and descriptions, as discovery shows them). Listing is not calling: the mesh policy decides who may call a
 * service, on the serving side of the proxy. Withheld services are not listed.
 */
import type { Connection, Stream } from "@libp2p/interface"
import { Duration, Effect, FiberSet, Layer } from "effect"
import * as ServiceKeys from "../../domain/ServiceKeys.js"
import { ServiceType } from "../../gen/mesh_pb.js"
import * as CatalogProtocol from "../../p2p/CatalogProtocol.js"
import { LocalServices } from "../../services/local/LocalServices.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"

/** A question must arrive this quickly; the answer is at hand. */
const DEADLINE = Duration.seconds(10)

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const host = yield* MeshHost
    const local = yield* LocalServices
    const runFork = yield* FiberSet.makeRuntime<never>()

    const answer = (stream: Stream, connection: Connection) =>
      Effect.gen(function* () {
        const bytes = yield* Effect.tryPromise((signal) => CatalogProtocol.readFrame(stream, signal))
        const request = yield* CatalogProtocol.decodeRequest(bytes)
        const type = request.type === ServiceType.UNSPECIFIED ? undefined : ServiceKeys.fromWire(request.type)
        const published = yield* local.published
        const listed =
          request.type !== ServiceType.UNSPECIFIED && type === undefined
            ? []
            : published.filter(
                (s) => (type === undefined || s.type === type) && (request.name === "" || s.name === request.name),
              )
        CatalogProtocol.writeFrame(
          stream,
          CatalogProtocol.encodeResponse(
            listed.map((s) => ({ type: ServiceKeys.toWire(s.type), name: s.name, description: s.description })),
          ),
        )
        yield* Effect.tryPromise((signal) => stream.close({ signal }))
      }).pipe(
        Effect.timeout(DEADLINE),
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.sync(() => stream.abort(new Error("catalog request failed"))),
            Effect.logDebug("catalog request failed").pipe(
              Effect.annotateLogs({ peer: connection.remotePeer.toString(), reason: String(error) }),
            ),
          ),
        ),
      )

    yield* Effect.acquireRelease(
      Effect.promise(() =>
        host.libp2p.handle(
          CatalogProtocol.PROTOCOL,
          (stream, connection) => {
            runFork(answer(stream, connection))
          },
          // Peers behind NAT are reached through a router's relay.
          { runOnLimitedConnection: true },
        ),
      ),
      () => Effect.promise(() => host.libp2p.unhandle(CatalogProtocol.PROTOCOL).catch(() => undefined)),
    )
  }),
)
