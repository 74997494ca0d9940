/**
 * A bare mesh peer in the test process that asks the routers' DHT directly, with no gossip to help it: what a node
 * finds from provider records alone. It enrolls like any node, dials the given routers before each search and
 * returns the providers the DHT names.
 */
import { peerIdFromString } from "@libp2p/peer-id"
import { Duration, Effect, Either } from "effect"
import * as KeySet from "../../src/domain/KeySet.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as ServiceKeys from "../../src/domain/ServiceKeys.js"
import type { ServiceType } from "../../src/domain/ServiceType.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import * as TestPeer from "../../src/testing/TestPeer.js"
import type { ControlPlaneProcess } from "./ControlPlaneProcess.js"
import { mintToken } from "./Requests.js"

interface RawEvent {
  readonly name: string
  readonly error?: unknown
  readonly providers?: ReadonlyArray<{
    readonly id: { toString(): string }
    readonly multiaddrs: ReadonlyArray<unknown>
  }>
  readonly closer?: ReadonlyArray<unknown>
}
/** kad-dht's network, which its public API does not expose: one request to one peer. */
interface RawNetwork {
  sendRequest(
    to: ReturnType<typeof peerIdFromString>,
    message: { readonly type: string; readonly key: Uint8Array },
    options: { readonly signal: AbortSignal },
  ): AsyncIterable<RawEvent>
}

export const make = (cp: ControlPlaneProcess) =>
  Effect.gen(function* () {
    const token = yield* mintToken(cp)
    const peer = PeerKey.generate()
    const enrolled = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
    const keys = yield* Effect.flatMap(MeshClient.request(`${cp.url}/keys`), (answer) =>
      Effect.sync(() => Either.getOrThrow(KeySet.verify(answer.body, [enrolled.controlPlanePublicKey], Date.now()))),
    )
    const host = yield* TestPeer.make({
      seed: peer.seed,
      credential: enrolled.biscuitToken,
      trust: TestPeer.trusting(keys),
    })

    /** Providers of the type (and name) the DHT names within `timeout`, after dialing each router address. */
    const providers = (
      routers: ReadonlyArray<string>,
      type: ServiceType,
      name?: string,
      timeout = Duration.seconds(2),
    ) =>
      Effect.gen(function* () {
        yield* Effect.forEach(routers, (address) => Effect.ignore(host.dial(address)), { concurrency: "unbounded" })
        const found = new Set<string>()
        yield* Effect.tryPromise(async (signal) => {
          for await (const info of host.libp2p.contentRouting.findProviders(ServiceKeys.cid(type, name), { signal })) {
            found.add(info.id.toString())
          }
        }).pipe(Effect.timeout(timeout), Effect.ignore)
        return found
      })

    /** One router's own answer to GET_PROVIDERS, with no query around it: its events, as they come. */
    const answerOf = (router: string, type: ServiceType, name: string | undefined, signal: AbortSignal) => {
      const network = (host.libp2p.services.dht as unknown as { network: RawNetwork }).network
      const key = ServiceKeys.cid(type, name).multihash.bytes
      const routerId = peerIdFromString(router.slice(router.lastIndexOf("/p2p/") + 5))
      return network.sendRequest(routerId, { type: "GET_PROVIDERS", key }, { signal })
    }

    /**
     * One router's own answer to GET_PROVIDERS: the providers it names with their addresses, or why it did not
     * answer. Tells a record the router lacks from one a query missed.
     */
    const ask = (router: string, type: ServiceType, name?: string, timeout = Duration.seconds(5)) =>
      Effect.gen(function* () {
        yield* Effect.ignore(host.dial(router))
        return yield* Effect.tryPromise(async (signal) => {
          const lines: Array<string> = []
          for await (const event of answerOf(router, type, name, signal)) {
            if (event.name === "PEER_RESPONSE") {
              lines.push(
                `providers: ${(event.providers ?? []).map((p) => `${p.id.toString()} (${p.multiaddrs.length} addrs)`).join(", ") || "none"}; closer ${(event.closer ?? []).length}`,
              )
            }
            if (event.name === "QUERY_ERROR") lines.push(`error: ${String(event.error)}`)
          }
          return lines.join("; ") || "no answer"
        }).pipe(
          Effect.timeout(timeout),
          Effect.orElseSucceed(() => "timed out"),
        )
      })

    /**
     * The providers one router itself names (none when it does not answer in time): whether that router holds the
     * records, whatever this probe's routing table holds (a search could start at a router that just died).
     */
    const names = (router: string, type: ServiceType, name?: string, timeout = Duration.seconds(2)) =>
      Effect.gen(function* () {
        yield* Effect.ignore(host.dial(router))
        const found = new Set<string>()
        yield* Effect.tryPromise(async (signal) => {
          for await (const event of answerOf(router, type, name, signal)) {
            for (const provider of event.providers ?? []) found.add(provider.id.toString())
          }
        }).pipe(Effect.timeout(timeout), Effect.ignore)
        return found
      })

    /**
     * One DHT search told in brief: how many peers the routing table holds and which of the given routers among them,
     * then what each router answered and how many other peers failed. Tells a router missing from the search from a
     * record missing at the router.
     */
    const explain = (routers: ReadonlyArray<string>, type: ServiceType, name?: string, timeout = Duration.seconds(5)) =>
      Effect.gen(function* () {
        yield* Effect.forEach(routers, (address) => Effect.ignore(host.dial(address)), { concurrency: "unbounded" })
        const routerIds = new Set(routers.map((address) => address.slice(address.lastIndexOf("/p2p/") + 5)))
        const dht = host.libp2p.services.dht as unknown as {
          routingTable: { closestPeers(id: Uint8Array, o: { count: number }): Array<{ toString(): string }> }
          findProviders(cid: unknown, o: { signal: AbortSignal }): AsyncIterable<RawEvent & { from?: unknown }>
        }
        const table = dht.routingTable.closestPeers(new Uint8Array(32), { count: 1_000 }).map(String)
        const lines = [`table: ${table.length} peers, ${table.filter((p) => routerIds.has(p)).length} of them routers`]
        let others = 0
        const started = Date.now()
        yield* Effect.tryPromise(async (signal) => {
          for await (const event of dht.findProviders(ServiceKeys.cid(type, name), { signal })) {
            const from = String(event.from ?? "")
            if (event.name !== "QUERY_ERROR" && event.name !== "PEER_RESPONSE") continue
            if (!routerIds.has(from)) {
              others += 1
              continue
            }
            const what =
              event.name === "QUERY_ERROR"
                ? String(event.error).slice(0, 120)
                : `${event.providers?.length ?? 0} providers`
            lines.push(`+${Date.now() - started} ms ${from}: ${what}`)
          }
        }).pipe(
          Effect.timeout(timeout),
          Effect.catchAll((e) => Effect.sync(() => lines.push(`ended: ${String(e).slice(0, 120)}`))),
        )
        lines.push(`${others} other peers asked`)
        return lines.join("; ")
      })

    return { providers, ask, names, explain }
  })
