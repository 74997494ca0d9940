/**
 * The sqlite SqlClient, on better-sqlite3, with one change from @effect/sql-sqlite-node: waiting for a lock held by
 * another process (the admin command, an operator's shell) does not block the event loop. better-sqlite3 would spin
 * inside its busy handler for the whole busy timeout, freezing every route, health probes included; here the handler
 * is off (timeout 0) and a statement that meets SQLITE_BUSY is retried after an Effect sleep, for up to
 * BUSY_WAIT, then fails. Only this process's database work waits meanwhile (it shares one connection).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import Sqlite from "better-sqlite3"
import { Clock, Duration, Effect, Layer, Schedule, Scope } from "effect"
import * as NulText from "../../domain/NulText.js"

const PREPARED_CAPACITY = 500

/** How long a statement keeps trying while another connection holds the lock. */
export const BUSY_WAIT = Duration.seconds(5)

/**
 * Only plain SQLITE_BUSY is worth waiting out. The extended codes are not: SQLITE_BUSY_SNAPSHOT means our transaction
 * reads a snapshot another writer has since replaced, and no amount of waiting will let it write.
 */
const isBusy = (error: SqlError): boolean => (error.cause as { code?: unknown } | undefined)?.code === "SQLITE_BUSY"

const realClock = Clock.make()

const busyRetry = Schedule.exponential(Duration.millis(5), 1.5).pipe(
  Schedule.either(Schedule.spaced(Duration.millis(100))),
  Schedule.upTo(BUSY_WAIT),
)

export const make = (
  filename: string,
): Effect.Effect<SqlClient.SqlClient, never, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function* () {
    const compiler = Statement.makeCompilerSqlite()
    const db = new Sqlite(filename, { timeout: 0 })
    yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
    db.pragma("journal_mode = WAL")
    db.pragma("foreign_keys = ON")
    db.pragma("synchronous = NORMAL")

    // Prepared statements by SQL text. A plain map: the effectful Cache of the stock client costs more per lookup than
    // most of our statements take to run.
    const prepared = new Map<string, Sqlite.Statement>()
    /** The prepared statement for `sql`; throws what better-sqlite3 throws. */
    const prepareSync = (sql: string): Sqlite.Statement => {
      let statement = prepared.get(sql)
      if (statement === undefined) {
        statement = db.prepare(sql)
        if (prepared.size >= PREPARED_CAPACITY) prepared.delete(prepared.keys().next().value as string)
        prepared.set(sql, statement)
      }
      return statement
    }
    const prepare = (sql: string) =>
      Effect.try({
        try: () => prepareSync(sql),
        catch: (cause) => new SqlError({ cause, message: "Failed to prepare statement" }),
      })

    /** Runs `statement` once: its rows, or the SqlError it failed with. */
    const execOnce = (
      statement: Sqlite.Statement,
      params: ReadonlyArray<unknown>,
      raw: boolean,
    ): ReadonlyArray<unknown> | SqlError => {
      try {
        if (statement.reader) return statement.all(...params) as ReadonlyArray<unknown>
        const result = statement.run(...params)
        return raw ? (result as unknown as ReadonlyArray<unknown>) : []
      } catch (cause) {
        return new SqlError({ cause, message: "Failed to execute statement" })
      }
    }

    /** Waits out another writer's lock: retries `statement` on SQLITE_BUSY for up to BUSY_WAIT. */
    const waitForLock = (statement: Sqlite.Statement, params: ReadonlyArray<unknown>, raw: boolean) => {
      const attempt = Effect.suspend(() => {
        const result = execOnce(statement, params, raw)
        return result instanceof SqlError ? Effect.fail(result) : Effect.succeed(result)
      })
      // Said once per statement, not per retry: an operator sees why requests are slow or refused with 503.
      return Effect.logInfo("sqlite database is locked by another writer; waiting").pipe(
        Effect.zipRight(Effect.retry(attempt, { schedule: busyRetry, while: isBusy })),
        // Another process releases its lock in real time, whatever clock the caller runs under (a test clock too).
        Effect.withClock(realClock),
      )
    }

    /** One step on the common path (run, answered); the lock wait only when the database is busy. */
    const settle = (statement: Sqlite.Statement, params: ReadonlyArray<unknown>, raw: boolean) => {
      const result = execOnce(statement, params, raw)
      if (!(result instanceof SqlError)) return Effect.succeed(result)
      return isBusy(result) ? waitForLock(statement, params, raw) : Effect.fail(result)
    }
    const runStatement = (statement: Sqlite.Statement, params: ReadonlyArray<unknown>, raw: boolean) =>
      Effect.suspend(() => settle(statement, params, raw))

    const run = (sql: string, params: ReadonlyArray<unknown>, raw = false) =>
      Effect.suspend(() => {
        const refused = NulText.refuse(params)
        if (refused !== undefined) return Effect.fail(refused)
        let statement: Sqlite.Statement
        try {
          statement = prepareSync(sql)
        } catch (cause) {
          return Effect.fail(new SqlError({ cause, message: "Failed to prepare statement" }))
        }
        return settle(statement, params, raw)
      })

    const connection: Connection = {
      execute: (sql, params, transformRows) =>
        transformRows ? Effect.map(run(sql, params), (rows) => transformRows(rows as Array<object>)) : run(sql, params),
      executeRaw: (sql, params) => run(sql, params, true),
      executeValues: (sql, params) =>
        Effect.flatMap(prepare(sql), (statement) =>
          Effect.try({
            try: () => {
              if (!statement.reader) {
                statement.run(...params)
                return []
              }
              statement.raw(true)
              try {
                return statement.all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
              } finally {
                statement.raw(false)
              }
            },
            catch: (cause) => new SqlError({ cause, message: "Failed to execute statement" }),
          }),
        ),
      executeUnprepared: (sql, params, transformRows) => {
        const effect = Effect.flatMap(
          Effect.try({
            try: () => db.prepare(sql),
            catch: (cause) => new SqlError({ cause, message: "Failed to prepare statement" }),
          }),
          (statement) => runStatement(statement, params ?? [], false),
        )
        return transformRows ? Effect.map(effect, (rows) => transformRows(rows as Array<object>)) : effect
      },
      executeStream: () => Effect.dieMessage("executeStream not implemented"),
    } as Connection

    // One connection, used by one fiber at a time; a transaction holds it to its end.
    const semaphore = yield* Effect.makeSemaphore(1)
    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1))),
        ),
        connection,
      ),
    )
    return yield* SqlClient.make({
      acquirer,
      compiler,
      transactionAcquirer,
      spanAttributes: [["db.system.name", "sqlite"]],
    })
  })

export const layer = (filename: string): Layer.Layer<SqlClient.SqlClient> =>
  Layer.scoped(SqlClient.SqlClient, make(filename)).pipe(Layer.provide(Reactivity.layer))
