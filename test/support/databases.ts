/**
 * Runs a suite once per database driver. The sqlite run always happens; the postgres run happens when
 * MESH_TEST_PG_URL is set (CI sets it) and is skipped with a visible reason otherwise. Each test gets a database of
 * its own (a new sqlite in memory, or a new postgres schema), so suites and tests never share rows.
 */
import { describe } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { DatabaseConfig } from "../../src/config/DatabaseConfig.js"
import * as TestDatabase from "../../src/testing/TestDatabase.js"

export const postgresUrl: string | undefined = process.env.MESH_TEST_PG_URL?.trim() || undefined

export interface DriverUnderTest {
  readonly driver: TestDatabase.Driver
  /** A fresh database for one test, released with the test's scope. */
  readonly fresh: Effect.Effect<DatabaseConfig, Error, Scope.Scope>
  /** A fresh database that two clients or processes can share (a sqlite file rather than memory). */
  readonly freshShared: Effect.Effect<DatabaseConfig, Error, Scope.Scope>
}

const drivers: ReadonlyArray<DriverUnderTest> = [
  { driver: "sqlite", fresh: Effect.succeed(TestDatabase.sqliteMemory), freshShared: TestDatabase.sqliteFile },
  {
    driver: "postgres",
    fresh: TestDatabase.fresh("postgres", postgresUrl),
    freshShared: TestDatabase.fresh("postgres", postgresUrl),
  },
]

/** Test names carry `[sqlite]` or `[postgres]`, which the database reporter counts at the end of the run. */
export const describeDatabases = (title: string, body: (db: DriverUnderTest) => void): void => {
  for (const db of drivers) {
    if (db.driver === "postgres" && postgresUrl === undefined) {
      describe.skip(`${title} [postgres] (skipped: MESH_TEST_PG_URL is not set)`, () => body(db))
    } else {
      describe(`${title} [${db.driver}]`, () => body(db))
    }
  }
}

/** Only the postgres run, for behaviour that exists only there (advisory locks, replicas on one server). */
export const describePostgres = (title: string, body: (url: string) => void): void => {
  if (postgresUrl === undefined) {
    describe.skip(`${title} [postgres] (skipped: MESH_TEST_PG_URL is not set)`, () => body(""))
  } else {
    const url = postgresUrl
    describe(`${title} [postgres]`, () => body(url))
  }
}
