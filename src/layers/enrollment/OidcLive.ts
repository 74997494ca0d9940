/**
 * Oidc over each configured issuer's discovery document and JWKS, fetched on first use and kept in memory (a failed
 * fetch is not kept: the next token tries again). A token whose key id the cached JWKS lacks makes us refetch the
 * JWKS once, since the issuer may have rotated, but at most once per REFETCH_INTERVAL_MS per issuer so that tokens
 * with made-up key ids cannot turn us into a load generator against the IdP. jose checks signatures and claims at
 * the time Effect's Clock gives.
 */
import { Clock, Effect, Either, Layer, Schema, SynchronizedRef } from "effect"
import {
  createLocalJWKSet,
  decodeJwt,
  errors,
  type JSONWebKeySet,
  type JWSAlgorithm,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  jwtVerify,
} from "jose"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { isSafeTerm } from "../../crypto/Biscuit.js"
import { Unauthorized, Unavailable } from "../../domain/Errors.js"
import * as HttpGet from "../../http/HttpGet.js"
import { Oidc, type VerifiedIdToken } from "../../services/enrollment/Oidc.js"

const REFETCH_INTERVAL_MS = 30_000

/** Asymmetric only: an HMAC "signature" would be keyed with something the IdP publishes. */
const ALGORITHMS: Array<JWSAlgorithm> = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
]

const Discovery = Schema.Struct({ issuer: Schema.String, jwks_uri: Schema.String })

interface Keys {
  readonly jwksUri: string
  readonly keySet: JWTVerifyGetKey
}

interface Issuer {
  /** As configured; the identity's issuer. */
  readonly issuer: string
  /** Without its trailing slash. */
  readonly base: string
  readonly current: Effect.Effect<Keys, Unavailable>
  readonly refetch: (seen: Keys) => Effect.Effect<Keys | undefined, Unavailable>
}

interface IssuerState {
  readonly keys: Keys | undefined
  /** Last refetch caused by an unknown key id (not the first fetch), successful or not. */
  readonly lastRefetchMs: number | undefined
}

const withoutSlash = (url: string): string => (url.endsWith("/") ? url.slice(0, -1) : url)

/** Operators see why an issuer is unavailable in the log too, not only the client that hit it. */
const warn = (error: Unavailable) => Effect.logWarning(error.message)

const rejected = (reason: string) => new Unauthorized({ message: `ID token validation failed: ${reason}` })

/** A stable reason for a jose failure; `undefined` when the failure is not jose's (a bug: a defect). */
const reasonOf = (error: unknown): string | undefined => {
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case "aud":
        return "audience not allowed"
      case "iss":
        return "issuer not configured"
      case "nbf":
      case "iat":
        return "not yet valid"
      case "exp":
        return "expiry missing"
      default:
        return "claims invalid"
    }
  }
  if (!(error instanceof errors.JOSEError)) return undefined
  switch (error.code) {
    case "ERR_JWT_EXPIRED":
      return "expired"
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
    case "ERR_JWKS_NO_MATCHING_KEY":
    case "ERR_JWKS_MULTIPLE_MATCHING_KEYS":
    case "ERR_JWK_INVALID":
    case "ERR_JWKS_INVALID":
      return "signature or key not recognised"
    case "ERR_JOSE_ALG_NOT_ALLOWED":
    case "ERR_JOSE_NOT_SUPPORTED":
      return "algorithm not allowed"
    default:
      return "malformed"
  }
}

const verifyJwt = async (token: string, keySet: JWTVerifyGetKey, options: JWTVerifyOptions): Promise<JWTPayload> => {
  try {
    return (await jwtVerify(token, keySet, options)).payload
  } catch (error) {
    if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error
    // No kid and several candidate keys: try each, as jose documents for createLocalJWKSet.
    for await (const key of error) {
      try {
        return (await jwtVerify(token, key, options)).payload
      } catch (inner) {
        if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner
      }
    }
    throw new errors.JWSSignatureVerificationFailed()
  }
}

/** The identity from verified claims; values biscuit cannot carry safely are dropped, or refused for the subject. */
const toVerified = (issuer: string, payload: JWTPayload): Effect.Effect<VerifiedIdToken, Unauthorized> => {
  const { sub, exp } = payload
  if (typeof sub !== "string" || sub.length === 0) return Effect.fail(rejected("subject missing"))
  if (typeof exp !== "number") return Effect.fail(rejected("expiry missing"))
  if (!isSafeTerm(sub)) return Effect.fail(rejected("unsupported characters in subject"))
  if (!isSafeTerm(issuer)) return Effect.fail(rejected("unsupported characters in issuer"))
  const keep = (value: unknown): value is string => typeof value === "string" && value.length > 0 && isSafeTerm(value)
  const email = payload.email_verified !== false && keep(payload.email) ? payload.email : undefined
  const rawGroups: ReadonlyArray<unknown> =
    typeof payload.groups === "string" ? [payload.groups] : Array.isArray(payload.groups) ? payload.groups : []
  const identity = { issuer, subject: sub, groups: rawGroups.filter(keep), ...(email === undefined ? {} : { email }) }
  return Effect.succeed({ identity, expiresAtMs: exp * 1000 })
}

export const layer = Layer.effect(
  Oidc,
  Effect.gen(function* () {
    const config = yield* ControlPlaneConfig
    const http = { insecureSkipTlsVerify: config.insecureSkipTlsVerify }

    const makeIssuer = (issuer: string): Effect.Effect<Issuer> =>
      Effect.gen(function* () {
        const base = withoutSlash(issuer)
        const unavailable = (what: string) => (error: HttpGet.HttpGetError | string) => {
          const reason = typeof error === "string" ? error : error.reason
          return new Unavailable({ message: `OIDC issuer ${issuer} is unavailable: ${what}: ${reason}` })
        }
        const fetchKeySet = (jwksUri: string) =>
          HttpGet.getJson(jwksUri, http).pipe(
            Effect.mapError(unavailable("JWKS")),
            Effect.flatMap((json) =>
              Effect.try({
                // createLocalJWKSet checks the shape itself.
                try: () => createLocalJWKSet(json as JSONWebKeySet),
                catch: () => unavailable("JWKS")("not a JSON Web Key Set"),
              }),
            ),
          )
        const load = Effect.gen(function* () {
          const json = yield* HttpGet.getJson(`${base}/.well-known/openid-configuration`, http).pipe(
            Effect.mapError(unavailable("discovery document")),
          )
          const discovery = yield* Schema.decodeUnknown(Discovery)(json).pipe(
            Effect.mapError(() => unavailable("discovery document")("issuer or jwks_uri missing")),
          )
          if (withoutSlash(discovery.issuer) !== base) {
            return yield* unavailable("discovery document")("it names another issuer")
          }
          return { jwksUri: discovery.jwks_uri, keySet: yield* fetchKeySet(discovery.jwks_uri) }
        }).pipe(Effect.tapError(warn))

        const state = yield* SynchronizedRef.make<IssuerState>({ keys: undefined, lastRefetchMs: undefined })

        /** The cached keys, loading them under the lock on first use so concurrent tokens share one fetch. */
        const current = Effect.flatMap(SynchronizedRef.get(state), (s) =>
          s.keys !== undefined
            ? Effect.succeed(s.keys)
            : SynchronizedRef.modifyEffect(state, (s) =>
                s.keys !== undefined
                  ? Effect.succeed([s.keys, s] as const)
                  : Effect.map(load, (keys) => [keys, { ...s, keys }] as const),
              ),
        )

        /** Keys newer than `seen`, or undefined when the refetch limit says not yet. */
        const refetch = (seen: Keys) =>
          SynchronizedRef.modifyEffect(
            state,
            (s): Effect.Effect<readonly [Either.Either<Keys | undefined, Unavailable>, IssuerState]> =>
              Effect.gen(function* () {
                // Another token already refetched while we waited for the lock.
                if (s.keys !== seen) return [Either.right(s.keys), s]
                const now = yield* Clock.currentTimeMillis
                if (s.lastRefetchMs !== undefined && now - s.lastRefetchMs < REFETCH_INTERVAL_MS) {
                  return [Either.right(undefined), s]
                }
                // The attempt counts even when it fails: an IdP that is down is not asked more often either.
                const fetched = yield* Effect.either(fetchKeySet(seen.jwksUri).pipe(Effect.tapError(warn)))
                const keys = Either.isRight(fetched) ? { jwksUri: seen.jwksUri, keySet: fetched.right } : seen
                return [Either.map(fetched, () => keys), { keys, lastRefetchMs: now }]
              }),
          ).pipe(Effect.flatMap(Either.match({ onLeft: Effect.fail, onRight: Effect.succeed })))

        return { issuer, base, current, refetch }
      })

    const issuers = new Map<string, Issuer>()
    for (const issuer of config.issuers) issuers.set(withoutSlash(issuer), yield* makeIssuer(issuer))

    return {
      verify: (idToken) =>
        Effect.gen(function* () {
          // The unverified iss only picks the issuer; jwtVerify checks it again against that issuer.
          const claimed = yield* Effect.try({ try: () => decodeJwt(idToken).iss, catch: () => rejected("malformed") })
          const issuer = typeof claimed === "string" ? issuers.get(withoutSlash(claimed)) : undefined
          if (issuer === undefined) return yield* rejected("issuer not configured")

          const attempt = (keys: Keys) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.tryPromise({
                try: () =>
                  verifyJwt(idToken, keys.keySet, {
                    issuer: [issuer.base, `${issuer.base}/`],
                    audience: [...config.allowedAudiences],
                    algorithms: ALGORITHMS,
                    requiredClaims: ["exp"],
                    currentDate: new Date(now),
                  }),
                catch: (error) => error,
              }).pipe(Effect.either),
            )

          const keys = yield* issuer.current
          let outcome = yield* attempt(keys)
          if (Either.isLeft(outcome) && outcome.left instanceof errors.JWKSNoMatchingKey) {
            const fresher = yield* issuer.refetch(keys)
            if (fresher !== undefined) outcome = yield* attempt(fresher)
          }
          if (Either.isLeft(outcome)) {
            const reason = reasonOf(outcome.left)
            return yield* reason === undefined ? Effect.die(outcome.left) : Effect.fail(rejected(reason))
          }
          return yield* toVerified(issuer.issuer, outcome.right)
        }).pipe(Effect.withSpan("Oidc.verify")),
    }
  }),
)
