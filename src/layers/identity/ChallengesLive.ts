/** Challenges against the Clock; spent enrollment proofs are remembered in the database for their window. */
import { createHash } from "node:crypto"
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Either, Layer } from "effect"
import * as Challenge from "../../domain/Challenge.js"
import { Unauthorized } from "../../domain/Errors.js"
import { type ChallengeProof, Challenges } from "../../services/identity/Challenges.js"
import { toBlob } from "../sql/Columns.js"

export const REPLAYED = "challenge was already used"

export const layer = Layer.effect(
  Challenges,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const verify = (proof: ChallengeProof) =>
      Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
        Either.match(Challenge.check({ ...proof, nowMs }), {
          onLeft: (reason) => Effect.fail(new Unauthorized({ message: reason })),
          onRight: () => Effect.void,
        }),
      )
    return {
      verify,
      verifyOnce: (proof) =>
        Effect.gen(function* () {
          yield* verify(proof)
          // The signature alone identifies the proof: it covers endpoint, peer and time.
          const digest = createHash("sha256").update(proof.signature).digest()
          const expiresAt = Number(proof.unixMs) + Challenge.WINDOW_MS
          const fresh = yield* sql`INSERT INTO challenge_replays (digest, expires_at)
            VALUES (${toBlob(digest)}, ${expiresAt}) ON CONFLICT (digest) DO NOTHING RETURNING expires_at`.pipe(
            Effect.orDie,
          )
          if (fresh.length === 0) return yield* new Unauthorized({ message: REPLAYED })
        }),
      prune: Effect.flatMap(
        Clock.currentTimeMillis,
        (now) => sql`DELETE FROM challenge_replays WHERE expires_at < ${now} RETURNING expires_at`,
      ).pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie,
      ),
    }
  }),
)
