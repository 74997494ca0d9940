/**
 * identify after admission is tried again: a member whose first identify of its router was lost still gets the DHT
 * (and gossip) over that link, instead of a link that stays up and finds nothing for as long as it lives. A router
 * link that never gets one is closed, to be made again.
 */

import { describe, expect, it } from "@effect/vitest"
import type { Connection } from "@libp2p/interface"
import { Duration, Effect, Fiber, TestClock } from "effect"
import * as ServiceKeys from "../../src/domain/ServiceKeys.js"
import * as Identify from "../../src/p2p/Identify.js"
import { makeTrust, startPeer, waitUntil } from "./fixtures.js"

describe("identify after admission", () => {
  it.scopedLive("a member whose first identify of its router failed still finds providers through it", () =>
    Effect.gen(function* () {
      const trust = makeTrust()
      const router = yield* startPeer({ mode: "router", trust })
      const provider = yield* startPeer({ mode: "node", trust })
      const asker = yield* startPeer({ mode: "node", trust })

      // The asker's first two identify exchanges are lost, as a stream timing out under load would lose them.
      const service = asker.libp2p.services.identify
      const original = service.identify.bind(service)
      let lost = 0
      service.identify = (connection, options) => {
        if (lost < 2) {
          lost++
          return Promise.reject(new Error("identify timed out"))
        }
        return original(connection, options)
      }

      yield* provider.dial(router.address)
      yield* asker.dial(router.address)
      const key = ServiceKeys.cid("inference", "identify-test")
      yield* waitUntil("the provider's record is placed on the router", () =>
        provider.libp2p.contentRouting.provide(key).then(
          () => true,
          () => false,
        ),
      )

      const found = new Set<string>()
      yield* waitUntil(
        "the asker finds the provider",
        async () => {
          try {
            for await (const info of asker.libp2p.contentRouting.findProviders(key, {
              signal: AbortSignal.timeout(2_000),
            })) {
              found.add(info.id.toString())
            }
          } catch {
            // An empty routing table: the query has nobody to ask.
          }
          return found.has(provider.peerId)
        },
        15_000,
      )
      expect(lost).toBe(2)
      expect(found.has(provider.peerId)).toBe(true)
    }),
  )

  it.effect("closes a router link that gets no identify, and leaves another link open", () =>
    Effect.gen(function* () {
      const connection = (closed: { count: number }) =>
        ({
          status: "open",
          remotePeer: { toString: () => "peer" },
          close: () => {
            closed.count++
            return Promise.resolve()
          },
        }) as unknown as Connection
      let attempts = 0
      const failing = () => {
        attempts++
        return Promise.reject(new Error("identify timed out"))
      }

      const routerLink = { count: 0 }
      const fiber = yield* Effect.fork(Identify.afterAdmission(failing, connection(routerLink), true))
      yield* TestClock.adjust(Duration.seconds(10))
      yield* Fiber.join(fiber)
      expect(attempts).toBe(5)
      expect(routerLink.count).toBe(1)

      const memberLink = { count: 0 }
      const other = yield* Effect.fork(Identify.afterAdmission(failing, connection(memberLink), false))
      yield* TestClock.adjust(Duration.seconds(10))
      yield* Fiber.join(other)
      expect(memberLink.count).toBe(0)
    }),
  )
})
