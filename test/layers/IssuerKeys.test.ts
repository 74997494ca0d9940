/**
 * An issuer's keys as the Oidc layer keeps them (`layers/enrollment/IssuerKeys.ts`), against the development issuer
 * on loopback. TestClock drives the schedule: a read the clock wakes is real HTTP, so the test waits in real time for
 * its outcome (`eventually`). The last test runs on the real clock, with an issuer that answers slowly.
 */
import { createServer, request } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Fiber, TestClock } from "effect"
import * as KeySchedule from "../../src/domain/IssuerKeySchedule.js"
import type { IssuerKeysStatus, OidcService } from "../../src/services/enrollment/Oidc.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import { eventually } from "../support/eventually.js"
import { seriesValue } from "../support/metrics.js"
import { AUDIENCE, type OidcOptions, oidcFor } from "../support/oidc.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

const setup = (issuerOptions: DevOidcIssuer.Options = {}, oidcOptions: OidcOptions = {}) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    const issuer = yield* DevOidcIssuer.make({ defaultAudience: AUDIENCE, ...issuerOptions })
    return { issuer, ...(yield* oidcFor([issuer.url], oidcOptions)) }
  })

const statusOf = (oidc: OidcService) => Effect.map(oidc.keys, (all) => all[0] as IssuerKeysStatus)

/** What a token is refused with. */
const refusal = (oidc: OidcService, token: string) =>
  Effect.map(Effect.flip(oidc.verify(token)), (error) => ({ tag: error._tag, message: error.message }))

const NOT_RECOGNISED = { tag: "Unauthorized", message: "ID token validation failed: signature or key not recognised" }

/** Waits (real time) until the clock holds a sleep ending at `at`: a fiber is waiting for that moment. */
const sleepingUntil = (at: number) =>
  eventually(TestClock.sleeps(), (sleeps) => Chunk.some(sleeps, (t) => t === at), { what: `a sleep until ${at}` })

describe("issuer keys", () => {
  it.scoped(
    "are read again in the background before they are stale: a withdrawn key is refused within the max age",
    () =>
      Effect.gen(function* () {
        const { issuer, oidc } = yield* setup()
        const old = yield* issuer.mint({ sub: "alice" })
        yield* oidc.verify(old)
        expect((yield* statusOf(oidc)).state).toBe("fresh")

        yield* issuer.rotateKey
        yield* issuer.withdrawOldKeys
        // Until the next read the withdrawn key is still trusted: that window is what --oidc-keys-max-age bounds.
        expect((yield* oidc.verify(old)).identity.subject).toBe("alice")

        const due = Duration.toMillis(Duration.minutes(10)) * KeySchedule.REFRESH_FRACTION
        yield* TestClock.adjust(Duration.millis(due - 1))
        expect(yield* issuer.jwksFetches).toBe(1)
        yield* TestClock.adjust(Duration.millis(1))
        // Read with no token asking: nobody waits on it.
        yield* eventually(statusOf(oidc), (s) => s.readAtMs === T0 + due, { what: "a background read" })
        expect(yield* issuer.jwksFetches).toBe(2)

        // Before the ten minutes are up, the withdrawn key is refused and the new one accepted.
        expect(yield* refusal(oidc, old)).toEqual(NOT_RECOGNISED)
        expect((yield* oidc.verify(yield* issuer.mint({ sub: "alice" }))).identity.subject).toBe("alice")
      }),
  )

  const readAfter = (cacheControl: string, expectedMs: number) =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup({ jwksCacheControl: cacheControl })
      yield* oidc.verify(yield* issuer.mint({ sub: "alice" }))
      yield* TestClock.adjust(Duration.millis(expectedMs - 1))
      expect(yield* issuer.jwksFetches).toBe(1)
      yield* TestClock.adjust(Duration.millis(1))
      yield* eventually(issuer.jwksFetches, (n) => n === 2, { what: `a read after ${expectedMs} ms` })
    })

  it.scoped("the issuer's Cache-Control max-age shortens their age", () =>
    readAfter("public, max-age=120, must-revalidate", 120_000 * KeySchedule.REFRESH_FRACTION),
  )

  it.scoped("the issuer's Cache-Control max-age never lengthens their age", () =>
    readAfter("max-age=86400", 600_000 * KeySchedule.REFRESH_FRACTION),
  )

  it.scoped("the issuer cannot shorten their age below 30 seconds", () =>
    readAfter("max-age=0", KeySchedule.MIN_PROVIDER_MAX_AGE_MS * KeySchedule.REFRESH_FRACTION),
  )

  it.scoped("a token under a just-published key waits for the next read when unknown key ids used up the reads", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup()
      yield* oidc.verify(yield* issuer.mint({ sub: "alice" }))
      // Each unknown key id is looked for; the bucket then holds no read until a second has passed.
      for (let i = 1; i < KeySchedule.READ_BURST; i++) {
        expect(yield* refusal(oidc, yield* issuer.mint({ sub: "mallory" }, { foreignKey: true }))).toEqual(
          NOT_RECOGNISED,
        )
      }
      expect(yield* issuer.jwksFetches).toBe(KeySchedule.READ_BURST)

      yield* issuer.rotateKey
      const rotated = yield* Effect.fork(oidc.verify(yield* issuer.mint({ sub: "alice" })))
      yield* sleepingUntil(T0 + KeySchedule.READ_INTERVAL_MS)
      expect(yield* issuer.jwksFetches).toBe(KeySchedule.READ_BURST)
      yield* TestClock.adjust(Duration.millis(KeySchedule.READ_INTERVAL_MS))
      expect((yield* Fiber.join(rotated)).identity.subject).toBe("alice")
      expect(yield* issuer.jwksFetches).toBe(KeySchedule.READ_BURST + 1)
    }),
  )

  it.scoped(
    "an issuer that is down: known keys still verify while stale, expired past the limit, fresh once back",
    () =>
      Effect.gen(function* () {
        const { issuer, oidc, metrics, logged } = yield* setup()
        const token = yield* issuer.mint({ sub: "alice" }, { expiresInSeconds: 3 * 86_400 })
        yield* oidc.verify(token)
        yield* issuer.setAnswering(false)

        yield* TestClock.adjust(Duration.minutes(8))
        const stale = yield* eventually(statusOf(oidc), (s) => s.state === "stale", { what: "stale keys" })
        expect(stale).toMatchObject({ issuer: issuer.url, readAtMs: T0 })
        expect(stale.problem).toMatch(/^(JWKS|discovery document): connection/)
        expect((yield* oidc.verify(token)).identity.subject).toBe("alice")
        expect((yield* logged).some((l) => l.startsWith("WARN") && l.includes("the key set is stale"))).toBe(true)
        const scrape = metrics.render()
        expect(seriesValue(scrape, `mesh_control_plane_oidc_keys_stale{issuer="${issuer.url}"}`)).toBe(1)
        expect(seriesValue(scrape, `mesh_control_plane_oidc_keys_read_timestamp_seconds{issuer="${issuer.url}"}`)).toBe(
          T0 / 1000,
        )
        const failed = `mesh_control_plane_oidc_keys_reads_total{issuer="${issuer.url}",outcome="failed",reason="scheduled"}`
        expect(seriesValue(scrape, failed)).toBeGreaterThanOrEqual(1)
        // Past the ten minutes the keys are still used.
        yield* TestClock.adjust(Duration.minutes(10))
        expect((yield* oidc.verify(token)).identity.subject).toBe("alice")

        // An hour past their age they are no longer used: the token cannot be checked (503), not refused (401).
        yield* TestClock.adjust(Duration.millis(KeySchedule.STALE_LIMIT_MS))
        expect((yield* statusOf(oidc)).state).toBe("expired")
        expect((yield* refusal(oidc, token)).tag).toBe("Unavailable")
        expect((yield* logged).some((l) => l.includes("past the stale limit and no longer used"))).toBe(true)

        yield* issuer.setAnswering(true)
        expect((yield* oidc.verify(token)).identity.subject).toBe("alice")
        expect(yield* statusOf(oidc)).toMatchObject({ state: "fresh", problem: undefined })
        expect((yield* logged).some((l) => l.startsWith("INFO") && l.includes("no longer stale"))).toBe(true)
      }),
  )

  it.scopedLive(
    "unknown key ids at once share reads: never two at a time, a bounded number, and a rotation still found",
    () =>
      Effect.gen(function* () {
        const issuer = yield* DevOidcIssuer.make({ defaultAudience: AUDIENCE })
        const slow = yield* slowJwks(issuer.url, 200)
        const { oidc } = yield* oidcFor([slow.url])
        const mint = (foreignKey: boolean) => issuer.mint({ sub: "alice" }, { issuer: slow.url, foreignKey })
        yield* oidc.verify(yield* mint(false))

        const started = Date.now()
        const flood = yield* Effect.fork(
          Effect.forEach(Array.from({ length: 200 }), () => Effect.flatMap(mint(true), (t) => refusal(oidc, t)), {
            concurrency: "unbounded",
          }),
        )
        // The issuer rotates once the flood has a read under way, which cannot have seen the new key.
        yield* eventually(Effect.sync(slow.reads), (n) => n >= 2, { what: "a read for the flood" })
        yield* issuer.rotateKey
        expect((yield* oidc.verify(yield* mint(false))).identity.subject).toBe("alice")
        const refusals = yield* Fiber.join(flood)
        const seconds = (Date.now() - started) / 1000
        expect(refusals.every((r) => r.message === NOT_RECOGNISED.message)).toBe(true)
        expect(slow.mostAtOnce()).toBe(1)
        // The first read, then what the bucket allows over the flood's time.
        expect(slow.reads() - 1).toBeLessThanOrEqual(KeySchedule.READ_BURST + Math.ceil(seconds))
      }),
  )
})

/**
 * A proxy in front of an issuer whose JWKS answers take `delayMs`, counting the reads and the most under way at once.
 * Tokens name the proxy as their issuer, and its discovery document is the issuer's with the proxy's address.
 */
const slowJwks = (target: string, delayMs: number) =>
  Effect.acquireRelease(
    Effect.async<{ server: ReturnType<typeof createServer>; counts: { reads: number; now: number; most: number } }>(
      (resume) => {
        const counts = { reads: 0, now: 0, most: 0 }
        let self = ""
        const server = createServer((req, res) => {
          const jwks = req.url === "/jwks"
          if (jwks) {
            counts.reads++
            counts.now++
            counts.most = Math.max(counts.most, counts.now)
          }
          const upstream = request(`${target}${req.url}`, (answer) => {
            const chunks: Array<Buffer> = []
            answer.on("data", (c: Buffer) => chunks.push(c))
            answer.on("end", () => {
              const body = Buffer.concat(chunks).toString("utf8").replaceAll(target, self)
              setTimeout(
                () => {
                  if (jwks) counts.now--
                  res.writeHead(answer.statusCode ?? 502, { "content-type": "application/json" })
                  res.end(body)
                },
                jwks ? delayMs : 0,
              )
            })
          })
          upstream.end()
        })
        server.listen(0, "127.0.0.1", () => {
          self = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
          resume(Effect.succeed({ server, counts }))
        })
      },
    ),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      }),
  ).pipe(
    Effect.map(({ server, counts }) => ({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      reads: () => counts.reads,
      mostAtOnce: () => counts.most,
    })),
  )
