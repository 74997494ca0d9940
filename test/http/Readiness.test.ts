import { expect, it } from "@effect/vitest"
import { Duration, Effect, Redacted, Schedule } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import { describePostgres } from "../support/databases.js"
import * as PostgresCluster from "../support/PostgresCluster.js"

const readyz = (url: string) =>
  Effect.promise(() => fetch(`${url}/readyz`).then(async (r) => [r.status, await r.json()] as const))

/** Polls until /readyz answers `status`; the outage is real, so the answer changes on the server's schedule. */
const eventually = (url: string, status: number) =>
  readyz(url).pipe(
    Effect.filterOrFail(([s]) => s === status),
    Effect.retry(Schedule.spaced(Duration.millis(100)).pipe(Schedule.upTo(Duration.seconds(20)))),
  )

describePostgres("readiness under a database outage", () => {
  it.live("readyz goes 200, 503 while postgres is down, and 200 again once it is back", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cluster = yield* PostgresCluster.make
        const cp = yield* Harness.make({ database: { driver: "postgres", dsn: Redacted.make(cluster.url) } })
        expect(yield* readyz(cp.url)).toMatchObject([200, { status: "ready" }])

        yield* cluster.stop
        const [, down] = yield* eventually(cp.url, 503)
        expect(down).toEqual({ error: "unavailable", message: "database unavailable" })
        // Liveness does not depend on the database.
        expect(yield* cp.api.public.healthz()).toEqual({ status: "ok" })

        yield* cluster.start
        expect(yield* eventually(cp.url, 200)).toMatchObject([200, { status: "ready" }])
      }),
    ),
  )
})
