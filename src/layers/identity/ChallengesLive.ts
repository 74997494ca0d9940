/** Challenges against the Clock. */
import { Clock, Effect, Either, Layer } from "effect"
import * as Challenge from "../../domain/Challenge.js"
import { Unauthorized } from "../../domain/Errors.js"
import { Challenges } from "../../services/identity/Challenges.js"

export const layer = Layer.succeed(Challenges, {
  verify: (proof) =>
    Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
      Either.match(Challenge.check({ ...proof, nowMs }), {
        onLeft: (reason) => Effect.fail(new Unauthorized({ message: reason })),
        onRight: () => Effect.void,
      }),
    ),
})
