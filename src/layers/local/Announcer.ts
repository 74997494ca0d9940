/**
 * Gossip announcements of the published services: every 10 s (±20%), each service is announced on its name's topic
 * and on the topic of each of its keys (tool names, model ids), those that someone listens to, with the labels this node's credential
 * attests and the service's requests in flight. When a peer starts listening on one of those topics it hears from
 * us within a second rather than at the next round, so a fresh lookup is answered quickly.
 */
import type { SubscriptionChangeData } from "@libp2p/gossipsub"
import { Clock, Duration, Effect, Either, Layer, Queue, Random, Ref } from "effect"
import * as Biscuit from "../../crypto/Biscuit.js"
import * as ServiceAnnouncement from "../../domain/ServiceAnnouncement.js"
import * as ServiceKeys from "../../domain/ServiceKeys.js"
import { LocalServices } from "../../services/local/LocalServices.js"
import { Membership } from "../../services/member/Membership.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"

const EVERY_MS = 10_000
const JITTER = 0.2
/** An early announcement on a topic waits this long for more new listeners, and repeats at most this often. */
const PROMPT_DELAY = Duration.millis(200)
const PROMPT_MIN_GAP_MS = 1_000

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const host = yield* MeshHost
    const local = yield* LocalServices
    const membership = yield* Membership
    const pubsub = host.libp2p.services.pubsub
    const lastSent = yield* Ref.make<ReadonlyMap<string, number>>(new Map())

    /** The labels our credential attests: what peers would verify, not what the configuration asked for. */
    const ownLabels = Effect.gen(function* () {
      const credential = yield* membership.credential
      const trust = yield* membership.trust
      const verified = Biscuit.verify(credential, trust.keyFor, yield* Clock.currentTimeMillis)
      return Either.isRight(verified) ? verified.right.facts.labels : {}
    })

    /** Announces on the listened-to topics (of `only`, when given) each published service's announcement. */
    const round = (only?: ReadonlySet<string>) =>
      Effect.gen(function* () {
        const services = yield* local.published
        if (services.length === 0) return
        const now = yield* Clock.currentTimeMillis
        const labels = yield* ownLabels
        const sent = new Map(yield* Ref.get(lastSent))
        for (const service of services) {
          const keys = service.keys.slice(0, ServiceKeys.MAX_ANNOUNCE_KEYS)
          const topics = [
            ServiceKeys.serviceTopic(service.type, service.name),
            ...keys.map((key) => ServiceKeys.topic(service.type, key)),
          ].filter((topic) => (only === undefined || only.has(topic)) && pubsub.getSubscribers(topic).length > 0)
          if (topics.length === 0) continue
          const message = ServiceAnnouncement.encode({
            peerId: host.peerId,
            type: service.type,
            service: service.name,
            keys,
            labels,
            activeRequests: service.inFlight,
            announcedAtMs: now,
          })
          for (const topic of topics) {
            if (only !== undefined && now - (sent.get(topic) ?? 0) < PROMPT_MIN_GAP_MS) continue
            yield* host.publish(topic, message)
            sent.set(topic, now)
          }
        }
        // Forget topics nobody listened to for a while, so the map stays the size of the live topics.
        for (const [topic, at] of sent) if (now - at > 10 * EVERY_MS) sent.delete(topic)
        yield* Ref.set(lastSent, sent)
      })

    yield* Effect.gen(function* () {
      const pause = yield* Random.nextRange(EVERY_MS * (1 - JITTER), EVERY_MS * (1 + JITTER))
      yield* Effect.sleep(Duration.millis(pause))
      yield* round().pipe(Effect.catchAllCause((cause) => Effect.logWarning("service announcement failed", cause)))
    }).pipe(Effect.forever, Effect.forkScoped)

    // New listeners on a topic: answer them soon, not at the next round.
    const prompts = yield* Effect.acquireRelease(Queue.sliding<string>(1024), Queue.shutdown)
    const onSubscriptions = (event: CustomEvent<SubscriptionChangeData>) => {
      for (const s of event.detail.subscriptions) {
        if (s.subscribe && s.topic.startsWith(ServiceKeys.TOPIC_PREFIX)) Queue.unsafeOffer(prompts, s.topic)
      }
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => pubsub.addEventListener("subscription-change", onSubscriptions)),
      () => Effect.sync(() => pubsub.removeEventListener("subscription-change", onSubscriptions)),
    )
    yield* Effect.gen(function* () {
      const first = yield* Queue.take(prompts)
      yield* Effect.sleep(PROMPT_DELAY)
      const more = yield* Queue.takeAll(prompts)
      yield* round(new Set([first, ...more])).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("service announcement failed", cause)),
      )
    }).pipe(Effect.forever, Effect.forkScoped)
  }),
)
