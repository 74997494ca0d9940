/** Credentials over the KeyRing and the Clock. */
import { Clock, Duration, Effect, Either, Layer } from "effect"
import { ControlPlaneConfig } from "../../config/ControlPlaneConfig.js"
import * as Biscuit from "../../crypto/Biscuit.js"
import { CredentialRejected, Credentials, digest } from "../../services/identity/Credentials.js"
import { KeyRing } from "../../services/identity/KeyRing.js"

export const layer = Layer.effect(
  Credentials,
  Effect.gen(function* () {
    const keyRing = yield* KeyRing
    const config = yield* ControlPlaneConfig
    const ttl = Duration.toMillis(config.biscuitTtl)

    return {
      mint: (request) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const snapshot = yield* keyRing.snapshot
          const { notAfterMs, ...facts } = request
          // Never outlives the key that signs it: a credential of a retired key is unverifiable, whatever it says.
          const keyRetires =
            snapshot.currentRetiresAt !== undefined && snapshot.currentRetiresAt > now
              ? snapshot.currentRetiresAt
              : Number.POSITIVE_INFINITY
          // Whole seconds, rounded down: never later than any deadline we were given.
          const expiresAtMs =
            Math.floor(Math.min(now + ttl, notAfterMs ?? Number.POSITIVE_INFINITY, keyRetires) / 1000) * 1000
          const bytes = Biscuit.mint({ ...facts, expiresAtMs }, snapshot.current)
          return { bytes, text: Biscuit.toText(bytes), expiresAtMs, digest: digest(bytes) }
        }),
      verify: (bytes, options = {}) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const snapshot = yield* keyRing.snapshot
          return yield* Either.match(Biscuit.verify(bytes, snapshot.publicKeyFor, now, options), {
            onLeft: (reason) => Effect.fail(new CredentialRejected({ reason })),
            onRight: Effect.succeed,
          })
        }),
    }
  }),
)
