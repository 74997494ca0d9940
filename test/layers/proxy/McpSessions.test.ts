/**
 * Sessions the serving node relays for peers (McpSessions), on the TestClock: bound to the peer that opened them,
 * ended at their backend (the `end` callback, a DELETE in the node) once idle past the limit with no request open,
 * or once their peer has been gone for the grace period, and not before; a peer back in time keeps its sessions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Ref, TestClock } from "effect"
import * as McpSessions from "../../../src/layers/proxy/McpSessions.js"

const setup = Effect.gen(function* () {
  const ended = yield* Ref.make<ReadonlyArray<string>>([])
  const present = yield* Ref.make<ReadonlySet<string>>(new Set(["peer-a", "peer-b"]))
  const sessions = yield* McpSessions.make<string>({
    end: (service, id, binding) =>
      Ref.update(ended, (all) => [
        ...all,
        `${service}/${id} ${binding.caller} ${binding.target} ${binding.protocolVersion}`,
      ]),
    present: (peer) => Effect.map(Ref.get(present), (set) => set.has(peer)),
    idle: Duration.minutes(30),
    peerGone: Duration.minutes(2),
  })
  return { sessions, ended, present }
})

describe("McpSessions", () => {
  it.scoped("binds a session to its opener and ends it at the backend once idle past the limit", () =>
    Effect.gen(function* () {
      const { sessions, ended } = yield* setup
      yield* sessions.bind("docs", "peer-a", "s1", "backend-1", "2025-06-18")
      expect(yield* sessions.owns("docs", "peer-b", "s1")).toBe(false)
      expect(yield* sessions.owns("docs", "peer-a", "s1", "2025-11-25")).toBe(true)
      expect(yield* sessions.count).toBe(1)
      yield* TestClock.adjust(Duration.minutes(29))
      expect(yield* Ref.get(ended)).toEqual([])
      yield* TestClock.adjust(Duration.minutes(2))
      expect(yield* Ref.get(ended)).toEqual(["docs/s1 peer-a backend-1 2025-11-25"])
      expect(yield* sessions.count).toBe(0)
      expect(yield* sessions.owns("docs", "peer-a", "s1")).toBe(false)
    }),
  )

  it.scoped("keeps a session with a request open (a GET stream), however long", () =>
    Effect.gen(function* () {
      const { sessions, ended } = yield* setup
      yield* sessions.bind("docs", "peer-a", "s1", "backend-1")
      yield* Effect.gen(function* () {
        yield* sessions.using("docs", "s1")
        yield* TestClock.adjust(Duration.hours(3))
        expect(yield* Ref.get(ended)).toEqual([])
      }).pipe(Effect.scoped)
      // Closed now: idle from here on.
      yield* TestClock.adjust(Duration.minutes(29))
      expect(yield* Ref.get(ended)).toEqual([])
      yield* TestClock.adjust(Duration.minutes(2))
      expect(yield* Ref.get(ended)).toHaveLength(1)
    }),
  )

  it.scoped("ends the sessions of a peer gone past the grace, and keeps those of a peer back in time", () =>
    Effect.gen(function* () {
      const { sessions, ended, present } = yield* setup
      yield* sessions.bind("docs", "peer-a", "s1", "backend-1")
      yield* sessions.bind("docs", "peer-b", "s2", "backend-1")
      yield* Effect.gen(function* () {
        yield* sessions.using("docs", "s1")
        yield* Ref.set(present, new Set())
        yield* TestClock.adjust(Duration.minutes(1))
        // B comes back within the grace; A does not, and its open stream does not keep its session.
        yield* Ref.set(present, new Set(["peer-b"]))
        yield* TestClock.adjust(Duration.minutes(3))
        expect(yield* Ref.get(ended)).toEqual(["docs/s1 peer-a backend-1 undefined"])
        expect(yield* sessions.owns("docs", "peer-b", "s2")).toBe(true)
      }).pipe(Effect.scoped)
    }),
  )
})
