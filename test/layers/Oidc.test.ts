import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { SignJWT } from "jose"
import type { OidcService } from "../../src/services/enrollment/Oidc.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import { AUDIENCE, oidcFor } from "../support/oidc.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

/** A running issuer and an Oidc that trusts it, with the clock at T0. */
const setup = Effect.gen(function* () {
  yield* TestClock.setTime(T0)
  const issuer = yield* DevOidcIssuer.make({ defaultAudience: AUDIENCE })
  const { oidc } = yield* oidcFor([issuer.url])
  return { issuer, oidc }
})

/** The error a token is refused with; its message must never quote the token. */
const refusal = (oidc: OidcService, token: string) =>
  Effect.gen(function* () {
    const error = yield* Effect.flip(oidc.verify(token))
    expect(error.message).not.toContain(token)
    return { tag: error._tag, message: error.message }
  })

describe("Oidc", () => {
  it.scoped("a valid token yields the identity and the token's expiry", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      const token = yield* issuer.mint(
        { sub: "alice", email: "alice@example.com", email_verified: true, groups: ["admins", "dev"] },
        { expiresInSeconds: 600 },
      )
      expect(yield* oidc.verify(token)).toEqual({
        identity: { issuer: issuer.url, subject: "alice", email: "alice@example.com", groups: ["admins", "dev"] },
        expiresAtMs: T0 + 600_000,
      })
      // One group as a plain string, and no email.
      const single = yield* oidc.verify(yield* issuer.mint({ sub: "bob", groups: "ops" }))
      expect(single.identity).toEqual({ issuer: issuer.url, subject: "bob", groups: ["ops"] })
      // Discovery and keys were fetched once, for both tokens.
      expect(yield* issuer.jwksFetches).toBe(1)
    }),
  )

  it.scoped("accepts any allowed audience and refuses others", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const issuer = yield* DevOidcIssuer.make()
      const { oidc } = yield* oidcFor([issuer.url], { allowedAudiences: ["first", "second"] })
      expect((yield* oidc.verify(yield* issuer.mint({ sub: "alice", aud: "second" }))).identity.subject).toBe("alice")
      expect((yield* oidc.verify(yield* issuer.mint({ sub: "alice", aud: ["x", "first"] }))).identity.subject).toBe(
        "alice",
      )
      expect(yield* refusal(oidc, yield* issuer.mint({ sub: "alice", aud: "other" }))).toEqual({
        tag: "Unauthorized",
        message: "ID token validation failed: audience not allowed",
      })
    }),
  )

  it.scoped("an expired token is refused with the expiry message", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      const token = yield* issuer.mint({ sub: "alice" }, { expiresInSeconds: 60 })
      expect((yield* oidc.verify(token)).expiresAtMs).toBe(T0 + 60_000)
      yield* TestClock.adjust(Duration.seconds(61))
      expect(yield* refusal(oidc, token)).toEqual({
        tag: "Unauthorized",
        message: "ID token validation failed: expired",
      })
    }),
  )

  it.scoped("a token signed by a key the JWKS does not publish is refused", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      expect(yield* refusal(oidc, yield* issuer.mint({ sub: "alice" }, { foreignKey: true }))).toEqual({
        tag: "Unauthorized",
        message: "ID token validation failed: signature or key not recognised",
      })
    }),
  )

  it.scoped("after the issuer rotates its key, a token with the new key id verifies", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      const before = yield* issuer.mint({ sub: "alice" })
      yield* oidc.verify(before)
      yield* issuer.rotateKey
      const after = yield* issuer.mint({ sub: "alice" })
      expect((yield* oidc.verify(after)).identity.subject).toBe("alice")
      expect(yield* issuer.jwksFetches).toBe(2)
      // Tokens under the old key stay valid while the issuer publishes it.
      expect((yield* oidc.verify(before)).identity.subject).toBe("alice")
    }),
  )

  it.scoped("a token from an issuer that is not configured is refused", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      expect(yield* refusal(oidc, yield* issuer.mint({ sub: "alice" }, { issuer: "https://idp.example" }))).toEqual({
        tag: "Unauthorized",
        message: "ID token validation failed: issuer not configured",
      })
      expect(yield* issuer.jwksFetches).toBe(0)
    }),
  )

  it.scoped("issuers match with or without one trailing slash", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const issuer = yield* DevOidcIssuer.make({ defaultAudience: AUDIENCE })
      const { oidc } = yield* oidcFor([`${issuer.url}/`])
      expect((yield* oidc.verify(yield* issuer.mint({ sub: "alice" }))).identity.subject).toBe("alice")
      const slashed = yield* issuer.mint({ sub: "bob" }, { issuer: `${issuer.url}/` })
      expect((yield* oidc.verify(slashed)).identity.subject).toBe("bob")
    }),
  )

  it.scoped("an email with email_verified false is dropped", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      const token = yield* issuer.mint({ sub: "alice", email: "alice@example.com", email_verified: false })
      expect((yield* oidc.verify(token)).identity).toEqual({ issuer: issuer.url, subject: "alice", groups: [] })
    }),
  )

  it.scoped("claim values biscuit cannot carry are dropped, or refused for the subject", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      const token = yield* issuer.mint({ sub: "alice", email: 'a"@example.com', groups: ["ok", 'bad"group', "back\\"] })
      expect((yield* oidc.verify(token)).identity).toEqual({ issuer: issuer.url, subject: "alice", groups: ["ok"] })
      expect(yield* refusal(oidc, yield* issuer.mint({ sub: 'al"ice' }))).toEqual({
        tag: "Unauthorized",
        message: "ID token validation failed: unsupported characters in subject",
      })
      expect(yield* refusal(oidc, yield* issuer.mint({ sub: "" }))).toEqual({
        tag: "Unauthorized",
        message: "ID token validation failed: subject missing",
      })
    }),
  )

  it.scoped("malformed tokens and symmetric algorithms are refused", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      expect(yield* refusal(oidc, "not-a-jwt")).toEqual({
        tag: "Unauthorized",
        message: "ID token validation failed: malformed",
      })
      const hmac = yield* Effect.promise(() =>
        new SignJWT({ sub: "alice" })
          .setProtectedHeader({ alg: "HS256" })
          .setIssuer(issuer.url)
          .setAudience(AUDIENCE)
          .setExpirationTime(T0 / 1000 + 600)
          .sign(new TextEncoder().encode("a secret that anybody could know")),
      )
      expect(yield* refusal(oidc, hmac)).toEqual({
        tag: "Unauthorized",
        message: "ID token validation failed: algorithm not allowed",
      })
    }),
  )

  it.scoped("an issuer nobody answers for is Unavailable, and the failure is not cached", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      // Down on an address that stays its own: a port released and bound again could be taken meanwhile.
      const issuer = yield* DevOidcIssuer.make({ defaultAudience: AUDIENCE, answering: false })
      const url = issuer.url
      const { oidc } = yield* oidcFor([url])
      const error = yield* refusal(oidc, yield* issuer.mint({ sub: "alice" }))
      expect(error.tag).toBe("Unavailable")
      expect(error.message).toContain(url)

      // The issuer comes up: the next token is verified.
      yield* issuer.setAnswering(true)
      expect((yield* oidc.verify(yield* issuer.mint({ sub: "alice" }))).identity.subject).toBe("alice")
    }),
  )

  it.scoped("concurrent first tokens share one discovery and JWKS fetch", () =>
    Effect.gen(function* () {
      const { issuer, oidc } = yield* setup
      const token = yield* issuer.mint({ sub: "alice" })
      yield* Effect.all(
        Array.from({ length: 5 }, () => oidc.verify(token)),
        { concurrency: "unbounded" },
      )
      expect(yield* issuer.jwksFetches).toBe(1)
    }),
  )
})
