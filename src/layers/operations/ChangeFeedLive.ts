/**
 * ChangeFeed over the database. On postgres, changes travel between replicas as NOTIFY on one channel, received by a
 * LISTEN fiber that reconnects after an outage (and counts the outage itself as a change, since notifications may
 * have been missed). On sqlite there is one server process, and the only other writer is the admin command: the
 * server reads sqlite's `data_version` every second, which moves when another connection has committed.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Clock, Duration, Effect, Layer, Option, Ref, type Scope, Stream, SubscriptionRef } from "effect"
import { ChangeFeed, type ChangeFeedService } from "../../services/operations/ChangeFeed.js"

const CHANNEL = "mesh_changes"
const RECONNECT_AFTER = Duration.seconds(1)
/** How often a sqlite server looks for another process's commit: a ban from the admin command reaches nodes in 5 s. */
export const SQLITE_POLL = Duration.seconds(1)

const realClock = Clock.make()

const make = (options: {
  readonly listen: boolean
}): Effect.Effect<ChangeFeedService, never, Scope.Scope | SqlClient.SqlClient> =>
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

    if (Option.isNone(pg) && options.listen) {
      const sql = yield* SqlClient.SqlClient
      // Per connection, and unchanged by this connection's own commits: it moves only for another process's write.
      const dataVersion = sql
        .unsafe<{ data_version: number }>("PRAGMA data_version")
        .pipe(Effect.map((rows) => Number(rows[0]?.data_version ?? 0)))
      const seen = yield* Ref.make(yield* Effect.orElseSucceed(dataVersion, () => 0))
      const poll = Effect.gen(function* () {
        // The other process commits in real time, whatever clock this one runs under (a test's clock, moved by
        // hours at once, would otherwise run thousands of polls in a row).
        yield* Effect.withClock(Effect.sleep(SQLITE_POLL), realClock)
        const current = yield* dataVersion
        if ((yield* Ref.getAndSet(seen, current)) !== current) yield* bump
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logDebug("could not read sqlite's data_version", cause)),
        Effect.forever,
      )
      yield* Effect.forkScoped(poll)
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
