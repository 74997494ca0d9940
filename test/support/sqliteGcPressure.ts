/**
 * Child process of test/layers/sql/SqliteClient.test.ts, run with `--expose-gc`. It drives many distinct prepared
 * statements through SqliteClientLive and forces full collections between queries, so the garbage collector finalizes
 * native statements while their database is open, after it was closed, and at process exit. better-sqlite3 12 on
 * Node 24 aborted the whole process in exactly that finalizer (`Statement::~Statement` during GC); any regression of
 * that kind kills this process, which the test reports with its stderr.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as SqliteClientLive from "../../src/layers/sql/SqliteClientLive.js"

const collect = (globalThis as { gc?: () => void }).gc
const file = process.argv[2]
if (collect === undefined || file === undefined) throw new Error("usage: node --expose-gc <this file> <sqlite file>")
const gc = collect

/** Rounds of open, query, close. Each round uses more distinct statements than the client keeps (500). */
const ROUNDS = 3
const STATEMENTS_PER_ROUND = 800
/** Short-lived garbage made after every query, so the young generation fills and collects on its own. */
const CHURN_OBJECTS = 1_000
const QUERIES_PER_FORCED_COLLECTION = 200

let queries = 0
let collections = 0
let churned = 0
const pressure = Effect.sync(() => {
  queries++
  // Collections that the allocator triggers run the finalizers from inside V8's own GC, which is where the abort
  // struck; forced ones (below) cover the full-heap path and the statements that survived into the old generation.
  const garbage: Array<{ readonly n: number }> = []
  for (let i = 0; i < CHURN_OBJECTS; i++) garbage.push({ n: i })
  churned += garbage.length
  if (queries % QUERIES_PER_FORCED_COLLECTION === 0) {
    gc()
    collections++
  }
})

const round = (n: number, scope: Scope.Scope) =>
  Effect.gen(function* () {
    const context = yield* Layer.buildWithScope(SqliteClientLive.layer(file), scope)
    const sql = Context.get(context, SqlClient.SqlClient)
    yield* sql`CREATE TABLE IF NOT EXISTS pressure (id INTEGER PRIMARY KEY, round INTEGER NOT NULL, body TEXT NOT NULL)`
    for (let i = 0; i < STATEMENTS_PER_ROUND; i++) {
      // Distinct SQL texts: each is a new native statement, and the client evicts the oldest to the collector.
      yield* sql.unsafe(`INSERT INTO pressure (round, body) VALUES (?, ?) -- ${n}.${i}`, [n, `row ${i}`])
      yield* sql.unsafe(`SELECT id, body FROM pressure WHERE round = ? AND id > ${i} LIMIT 3`, [n])
      // Never cached: garbage as soon as it has run.
      yield* sql.unsafe(`SELECT COUNT(*) AS c FROM pressure WHERE id >= ${i}`).unprepared
      yield* pressure
    }
    const [row] = yield* sql<{ readonly c: number }>`SELECT COUNT(*) AS c FROM pressure WHERE round = ${n}`
    if (row?.c !== STATEMENTS_PER_ROUND) return yield* Effect.dieMessage(`round ${n} stored ${row?.c} rows`)
  })

const program = Effect.gen(function* () {
  for (let n = 0; n < ROUNDS; n++) {
    // Closing the scope closes the database while the client still holds up to 500 prepared statements; the
    // collection that follows finalizes them after their database is gone.
    const scope = yield* Scope.make()
    yield* round(n, scope)
    yield* Scope.close(scope, Exit.void)
    gc()
    collections++
  }
  // The last database stays open with its statements alive: the environment tears them down at exit.
  yield* round(ROUNDS, yield* Scope.make())
})

Effect.runPromise(program).then(
  () => {
    process.stdout.write(
      `ok ${queries} queries, ${churned} objects churned, ${collections} forced collections on Node ${process.version}\n`,
    )
  },
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`)
    process.exitCode = 1
  },
)
