/**
 * Oidc over each configured issuer's keys (`IssuerKeys.ts`: read on first use, then kept fresh in the background
 * within `--oidc-keys-max-age`). A token whose key id the held keys lack waits for a read that starts after it
 * arrived, since the issuer may have just published that key; reads are shared and rate limited per issuer there.
 * jose checks signatures and claims at the time Effect's Clock gives.
 */
import { Clock, Effect, Either, Layer, Runtime } from "effect"
import {
  decodeJwt,
  errors,
  type JWSAlgorithm,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  jwtVerify,
} from "jose"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import { isSafeTerm } from "../../crypto/Biscuit.js"
import { Unauthorized } from "../../domain/Errors.js"
import { withoutSlash } from "../../http/OidcDiscovery.js"
import { Oidc, type VerifiedIdToken } from "../../services/enrollment/Oidc.js"
import { Metrics } from "../../services/operations/Metrics.js"
import * as IssuerKeys from "./IssuerKeys.js"

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

const prefix = "mesh_control_plane_oidc_keys_"

export const layer = Layer.scoped(
  Oidc,
  Effect.gen(function* () {
    const config = yield* ControlPlaneConfig
    const metrics = yield* Metrics
    const reads = metrics.counter(
      `${prefix}reads_total`,
      "Reads of OIDC issuers' key sets, by issuer, reason and outcome.",
    )
    const stale = metrics.gauge(
      `${prefix}stale`,
      "1 while an issuer's key set is stale or expired: its last read failed, or it is past its max age.",
    )
    const readAt = metrics.gauge(`${prefix}read_timestamp_seconds`, "When an issuer's key set was last read.")

    const issuers = new Map<string, { readonly issuer: string; readonly keys: IssuerKeys.IssuerKeys }>()
    for (const issuer of config.issuers) {
      const keys = yield* IssuerKeys.make({
        issuer,
        maxAge: config.oidcKeysMaxAge,
        http: { insecureSkipTlsVerify: config.insecureSkipTlsVerify },
        reads,
      })
      issuers.set(withoutSlash(issuer), { issuer, keys })
    }
    const keys = Effect.forEach([...issuers.values()], (i) => i.keys.status)

    const runSync = Runtime.runSync(yield* Effect.runtime<never>())
    metrics.beforeScrape(() => {
      for (const status of runSync(keys)) {
        stale.set({ issuer: status.issuer }, status.state === "stale" || status.state === "expired" ? 1 : 0)
        if (status.readAtMs !== undefined) readAt.set({ issuer: status.issuer }, status.readAtMs / 1000)
      }
    })

    return {
      keys,
      verify: (idToken) =>
        Effect.gen(function* () {
          // The unverified iss only picks the issuer; jwtVerify checks it again against that issuer.
          const claimed = yield* Effect.try({ try: () => decodeJwt(idToken).iss, catch: () => rejected("malformed") })
          const entry = typeof claimed === "string" ? issuers.get(withoutSlash(claimed)) : undefined
          if (entry === undefined) return yield* rejected("issuer not configured")
          const base = withoutSlash(entry.issuer)

          const attempt = (keySet: JWTVerifyGetKey) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.tryPromise({
                try: () =>
                  verifyJwt(idToken, keySet, {
                    issuer: [base, `${base}/`],
                    audience: [...config.allowedAudiences],
                    algorithms: ALGORITHMS,
                    requiredClaims: ["exp"],
                    currentDate: new Date(now),
                  }),
                catch: (error) => error,
              }).pipe(Effect.either),
            )

          let outcome = yield* attempt(yield* entry.keys.current)
          if (Either.isLeft(outcome) && outcome.left instanceof errors.JWKSNoMatchingKey) {
            // The issuer may have published this key since our read: look again rather than refuse.
            outcome = yield* attempt(yield* entry.keys.fresher)
          }
          if (Either.isLeft(outcome)) {
            const reason = reasonOf(outcome.left)
            return yield* reason === undefined ? Effect.die(outcome.left) : Effect.fail(rejected(reason))
          }
          return yield* toVerified(entry.issuer, outcome.right)
        }).pipe(Effect.withSpan("Oidc.verify")),
    }
  }),
)
