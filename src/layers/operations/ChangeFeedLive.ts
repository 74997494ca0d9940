/**
 * ChangeFeed over the database. On postgres, changes travel between replicas as NOTIFY on one channel, received by a
 * LISTEN fiber that reconnects after an outage (and counts the outage itself as a change, since notifications may
 * have been missed). On sqlite there is one server process; a write by another process (the admin command) is seen
 * when the caches expire, within seconds.
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option, type Scope, Stream, SubscriptionRef } from "effect"
import { ChangeFeed, type ChangeFeedService } from "../../services/operations/ChangeFeed.js"

const CHANNEL = "mesh_changes"
const RECONNECT_AFTER = Duration.seconds(1)

const make = (options: { readonly listen: boolean }): Effect.Effect<ChangeFeedService, never, Scope.Scope> =>
  Effect.gen(function* () {
    const version = yield* SubscriptionRef.make(0)
    const bump = SubscriptionRef.update(version, (v) => v + 1)
    // The SqlClient layer hides its driver's tag in its type; on postgres it is there at run time.
    const pg = yield* Effect.serviceOption(PgClient.PgClient)

    if (Option.isSome(pg) && options.listen) {
      const listen = Effect.gen(function* () {
        yield* Stream.runForEach(pg.value.listen(CHANNEL), () => bump).pipe(
          Effect.catchAllCause((cause) => Effect.logWarning("change feed interrupted; reconnecting", cause)),
        )
        // The session ended: notifications may have been missed, so count it as a change.
        yield* bump
        yield* Effect.sleep(RECONNECT_AFTER)
      }).pipe(Effect.forever)
      yield* Effect.forkScoped(listen)
    }

    return {
      publish: (topic) =>
        Effect.zipRight(
          bump,
          Option.match(pg, {
            onNone: () => Effect.void,
            onSome: (client) =>
              // pg_notify, not the client's notify(): that sends `NOTIFY chan, $1`, which postgres refuses (NOTIFY
              // takes no parameters), so no replica ever heard a change.
              client`SELECT pg_notify(${CHANNEL}, ${topic})`.pipe(
                Effect.catchAll((error) =>
                  Effect.logWarning("could not announce a change to other replicas", error.message),
                ),
              ),
          }),
        ),
      version: SubscriptionRef.get(version),
      changedSince: (since) =>
        version.changes.pipe(
          Stream.filter((v) => v !== since),
          Stream.runHead,
          Effect.map((v) => Option.getOrElse(v, () => since)),
        ),
    }
  })

/** A server replica: announces its changes and hears everyone else's. */
export const layer = Layer.scoped(ChangeFeed, make({ listen: true }))

/** A one-shot command (the admin CLI): announces its change and exits, hearing nothing. */
export const publisher = Layer.scoped(ChangeFeed, make({ listen: false }))
