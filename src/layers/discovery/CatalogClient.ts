/**
 * The asking side of `/mesh/catalog/1.0.0`: reach a provider (authenticating it first if this node has not yet),
 * ask which services it publishes, and return them with the labels its credential attests. Both go through the
 * host's connect and openStream, so an authenticated connection already open (relayed included) is used before any
 * dial, and a dial follows the host's one dial plan (DialPolicy.ts).
 */
import { Duration, Effect, Either, Exit } from "effect"
import * as HiddenText from "../../domain/HiddenText.js"
import { isServiceName } from "../../domain/NodeFile.js"
import * as ServiceKeys from "../../domain/ServiceKeys.js"
import type { ServiceType } from "../../domain/ServiceType.js"
import * as CatalogProtocol from "../../p2p/CatalogProtocol.js"
import type { AuthenticatedPeer } from "../../p2p/Trust.js"
import { describe } from "../../platform/Describe.js"
import type { MeshHostService } from "../../services/mesh/MeshHost.js"

const DIAL_TIMEOUT = Duration.seconds(10)
const ASK_TIMEOUT = Duration.seconds(5)
const CLOSE_TIMEOUT = Duration.seconds(1)

export interface CatalogEntry {
  readonly type: ServiceType
  readonly name: string
  readonly description: string
}

/** The peer as authenticated on a connection we have, or by reaching it as the host reaches any peer. */
export const reach = (host: MeshHostService, peerId: string): Effect.Effect<AuthenticatedPeer, string> =>
  host.connect(peerId).pipe(
    Effect.mapError((error) => error.reason),
    Effect.timeoutFail({ duration: DIAL_TIMEOUT, onTimeout: () => "no connection within 10s" }),
  )

/** The provider's published services of `type` (and `name`, when given). */
export const ask = (
  host: MeshHostService,
  peerId: string,
  type: ServiceType,
  name: string | undefined,
): Effect.Effect<ReadonlyArray<CatalogEntry>, string> =>
  Effect.acquireUseRelease(
    host.openStream(peerId, CatalogProtocol.PROTOCOL).pipe(
      Effect.map(({ stream }) => stream),
      Effect.mapError((error) => error.reason),
    ),
    (stream) =>
      Effect.gen(function* () {
        CatalogProtocol.writeFrame(
          stream,
          CatalogProtocol.encodeRequest({ type: ServiceKeys.toWire(type), name: name ?? "" }),
        )
        const bytes = yield* Effect.tryPromise({
          try: (signal) => CatalogProtocol.readFrame(stream, signal),
          catch: describe,
        })
        const response = yield* Either.mapLeft(CatalogProtocol.decodeResponse(bytes), (reason) => reason)
        if (response.error.length > 0) return yield* Effect.fail("provider refused the catalog request")
        // The answer is the provider's word: keep only what we asked for, in a shape we can show, and its
        // description without hidden text, as a tool's (PeerTools): an agent reads it.
        return response.services.flatMap((s): ReadonlyArray<CatalogEntry> => {
          const listed = ServiceKeys.fromWire(s.type)
          if (listed !== type || !isServiceName(s.name) || (name !== undefined && s.name !== name)) return []
          return [
            {
              type,
              name: s.name,
              description: HiddenText.clean(s.description).slice(0, CatalogProtocol.MAX_DESCRIPTION),
            },
          ]
        })
      }),
    (stream, exit) => {
      const abort = Effect.sync(() => stream.abort(new Error("catalog request ended")))
      return Exit.isSuccess(exit)
        ? Effect.tryPromise((signal) => stream.close({ signal })).pipe(
            Effect.timeout(CLOSE_TIMEOUT),
            Effect.catchAll(() => abort),
          )
        : abort
    },
  ).pipe(Effect.timeoutFail({ duration: ASK_TIMEOUT, onTimeout: () => "catalog request timed out" }))
