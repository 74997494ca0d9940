/**
 * Crash safety of the `mesh-control-plane` process: killed with SIGKILL in the middle of enrollments, cut off from
 * postgres under load, and blocked by another writer on its sqlite file. What users rely on: no usage is spent without
 * its node, no admitted client is lost, every request ends with an answer (503 while the database is away), and the
 * service comes back by itself. Every test reads the database back afterwards.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Option, Redacted } from "effect"
import type { DatabaseConfig } from "../../src/config/DatabaseConfig.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import * as TestDatabase from "../../src/testing/TestDatabase.js"
import { describePostgres } from "../support/databases.js"
import * as PostgresCluster from "../support/PostgresCluster.js"
import * as ControlPlaneProcess from "./ControlPlaneProcess.js"
import * as Db from "./Database.js"
import * as Forwarder from "./Forwarder.js"
import { admin, attempt, errorBody, type MintedToken, mintToken, type Outcome, poll, text } from "./Requests.js"

const UNAVAILABLE = { error: "unavailable", message: "database unavailable" }

// ---------------------------------------------------------------------------------------------------------------
// kill -9 during enrollments

const CLIENTS = 100
const MAX_USAGES = 60
/** The process is killed when this many clients have had their answer, with most requests still in flight. */
const KILL_AFTER_ANSWERS = 10

interface ClientResult {
  readonly peer: MeshClient.Peer
  /** The answer that ended the client's attempts. */
  readonly answer: MeshClient.Answer
  /** Attempts that ended without an answer (connection refused or reset, or none in time) or with a 5xx. */
  readonly failures: ReadonlyArray<string>
}

const enrollmentsSurviveKill = (database: DatabaseConfig) =>
  Effect.gen(function* () {
    const flags = ["--auto-approve-enrollment"]
    const first = yield* ControlPlaneProcess.start({ database, flags })
    const token = yield* mintToken(first, { max_usages: MAX_USAGES })
    // The address the clients use, which stays theirs across the crash.
    const front = yield* Forwarder.make(first.port)

    let answered = 0
    const killNow = yield* Deferred.make<void>()
    /** One enrolling machine: retries with a fresh challenge (signed now) until it gets an answer. */
    const client = (peer: MeshClient.Peer) =>
      Effect.gen(function* () {
        const failures: Array<string> = []
        const deadline = Date.now() + 90_000
        for (;;) {
          const outcome = yield* attempt(MeshClient.enroll(front.url, peer, token.token))
          if (outcome._tag === "answer" && outcome.value.status < 500) {
            if (++answered === KILL_AFTER_ANSWERS) yield* Deferred.succeed(killNow, undefined)
            return { peer, answer: outcome.value, failures } satisfies ClientResult
          }
          failures.push(
            outcome._tag === "answer"
              ? `${outcome.value.status} ${text(outcome.value)}`
              : outcome._tag === "failed"
                ? `connection failed: ${outcome.reason}`
                : `no answer within 10 s`,
          )
          if (Date.now() > deadline) return yield* Effect.dieMessage(`no answer for 90 s: ${failures.join("; ")}`)
          yield* Effect.sleep(Duration.millis(100 + Math.random() * 100))
        }
      })

    const peers = Array.from({ length: CLIENTS }, () => PeerKey.generate())
    const clients = yield* Effect.fork(Effect.all(peers.map(client), { concurrency: "unbounded" }))
    yield* Deferred.await(killNow).pipe(Effect.timeout(Duration.seconds(60)))
    const killed = yield* first.kill
    expect(killed.signal).toBe("SIGKILL")
    const answeredBeforeKill = answered

    // Same database, same address: the clients keep retrying where they were.
    const second = yield* ControlPlaneProcess.start({ database, flags })
    yield* front.target(second.port)
    const results = yield* Fiber.join(clients)

    // The crash happened in the middle: some clients were answered before it, some had to retry across it.
    expect(answeredBeforeKill).toBeGreaterThanOrEqual(KILL_AFTER_ANSWERS)
    expect(answeredBeforeKill).toBeLessThan(CLIENTS)
    expect(results.filter((r) => r.failures.length > 0).length).toBeGreaterThan(0)
    // Failed attempts were refused or cut connections (the killed process), never an error answer or a hang.
    expect(results.flatMap((r) => r.failures).filter((f) => !f.startsWith("connection failed"))).toEqual([])

    const approved: Array<ClientResult & { readonly credential: Uint8Array }> = []
    const refused: Array<string> = []
    for (const result of results) {
      if (result.answer.status === 200) {
        const decoded = yield* MeshClient.decodeEnroll(result.answer)
        expect(decoded.status).toBe(EnrollmentStatus.APPROVED)
        approved.push({ ...result, credential: decoded.biscuitToken })
      } else {
        refused.push(`${result.answer.status} ${text(result.answer)}`)
      }
    }
    // Every usage went to a client: a client whose admission committed before the crash, unanswered, is admitted
    // again on retry without spending; one whose admission did not commit spends a usage afresh.
    expect(approved).toHaveLength(MAX_USAGES)
    expect(new Set(refused)).toEqual(new Set(['410 {"error":"gone","message":"bootstrap token has no usages left"}']))

    const counts = yield* Db.numbers(
      database,
      `SELECT
        (SELECT usages_count FROM bootstrap_tokens WHERE id = ?) AS usages,
        (SELECT COUNT(*) FROM nodes n JOIN enrollment_requests r ON r.peer_id = n.peer_id
          WHERE r.token_id = ?) AS nodes_of_token,
        (SELECT COUNT(*) FROM enrollment_requests WHERE token_id = ? AND status = 'approved') AS approved_requests,
        (SELECT COUNT(*) FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM enrollment_requests r
          WHERE r.peer_id = n.peer_id AND r.status = 'approved')) AS nodes_without_request`,
      [token.id, token.id, token.id],
    )
    expect(counts).toEqual({
      usages: MAX_USAGES,
      nodes_of_token: MAX_USAGES,
      approved_requests: MAX_USAGES,
      nodes_without_request: 0,
    })
    const nodes = new Set(yield* Db.strings(database, "SELECT peer_id FROM nodes"))
    expect(approved.filter((r) => !nodes.has(r.peer.peerId)).map((r) => r.peer.peerId)).toEqual([])

    // The credential each client received last is its current one, whether it came before or after the crash.
    const sample = [
      ...approved.filter((r) => r.failures.length === 0).slice(0, 5),
      ...approved.filter((r) => r.failures.length > 0).slice(0, 5),
    ]
    expect(sample.length).toBeGreaterThan(0)
    for (const r of sample) {
      const refreshed = yield* MeshClient.refresh(second.url, r.peer, r.credential)
      expect(
        refreshed.status,
        `refresh of a client with ${r.failures.length} failed attempts: ${text(refreshed)}`,
      ).toBe(200)
    }
  })

describe("control plane killed with SIGKILL during enrollments [sqlite]", () => {
  it.scopedLive(
    "100 auto-approved enrollments on a 60-usage token, killed and restarted midway: usages, nodes and requests agree",
    () => Effect.flatMap(TestDatabase.sqliteFile, enrollmentsSurviveKill),
    120_000,
  )
})

describePostgres("control plane killed with SIGKILL during enrollments", (url) => {
  it.scopedLive(
    "100 auto-approved enrollments on a 60-usage token, killed and restarted midway: usages, nodes and requests agree",
    () => Effect.flatMap(TestDatabase.postgresSchema(url), enrollmentsSurviveKill),
    120_000,
  )
})

// ---------------------------------------------------------------------------------------------------------------
// postgres stopped under load

type Kind = "info" | "keys" | "enroll" | "mint" | "list"

interface Sent {
  readonly kind: Kind
  readonly started: number
  readonly ended: number
  readonly outcome: Outcome<MeshClient.Answer>
}

const describeSent = (s: Sent): string =>
  s.outcome._tag === "answer"
    ? `${s.kind} ${s.outcome.value.status} ${text(s.outcome.value).slice(0, 120)}`
    : `${s.kind} ${s.outcome._tag} after ${s.outcome.ms} ms`

const isUnavailable = (answer: MeshClient.Answer): boolean =>
  answer.status === 503 &&
  answer.headers.get("retry-after") === "1" &&
  JSON.stringify(errorBody(answer)) === JSON.stringify(UNAVAILABLE)

/**
 * Clients hammering a control plane, one worker per entry of `kinds`, each sending its kind of request in a loop
 * and recording how every one ended (each with a 10 s bound). `minted` holds the ids of tokens acknowledged 201.
 */
const startLoad = (cp: ControlPlaneProcess.ControlPlaneProcess, kinds: ReadonlyArray<Kind>) =>
  Effect.gen(function* () {
    const enrollToken = yield* mintToken(cp, { max_usages: 10_000 })
    const sent: Array<Sent> = []
    const minted: Array<string> = []
    let loading = true
    const request = (kind: Kind): Effect.Effect<MeshClient.Answer> => {
      switch (kind) {
        case "info":
          return MeshClient.request(`${cp.url}/info`)
        case "keys":
          return MeshClient.request(`${cp.url}/keys`)
        case "enroll":
          return MeshClient.enroll(cp.url, PeerKey.generate(), enrollToken.token)
        case "mint":
          return admin(cp, "POST", "/admin/bootstrap-tokens", { role: "mesh:role:node" })
        case "list":
          return admin(cp, "GET", "/admin/bootstrap-tokens")
      }
    }
    const worker = (kind: Kind) =>
      Effect.gen(function* () {
        while (loading) {
          const started = Date.now()
          const outcome = yield* attempt(request(kind), Duration.seconds(10))
          sent.push({ kind, started, ended: Date.now(), outcome })
          if (kind === "mint" && outcome._tag === "answer" && outcome.value.status === 201) {
            minted.push((JSON.parse(text(outcome.value)) as MintedToken).id)
          }
          yield* Effect.sleep(Duration.millis(20))
        }
      })
    const fiber = yield* Effect.fork(Effect.all(kinds.map(worker), { concurrency: "unbounded" }))
    const stop = Effect.suspend(() => {
      loading = false
      return Fiber.join(fiber)
    })
    return { enrollToken, sent, minted, stop }
  })

describePostgres("control plane while its postgres server stops and starts", () => {
  it.scopedLive(
    "every request is answered (503 where the database is needed), readyz follows, and service resumes by itself",
    () =>
      Effect.gen(function* () {
        const cluster = yield* PostgresCluster.make
        const database: DatabaseConfig = { driver: "postgres", dsn: Redacted.make(cluster.url) }
        const cp = yield* ControlPlaneProcess.start({ database })
        const kinds: ReadonlyArray<Kind> = ["info", "keys", "enroll", "mint", "list"]
        const load = yield* startLoad(
          cp,
          Array.from({ length: 20 }, (_, i) => kinds[i % kinds.length] ?? "info"),
        )
        yield* poll(
          Effect.sync(() => load.minted.length),
          (n) => n >= 5,
          { what: "tokens minted under load", timeout: Duration.seconds(20) },
        )

        yield* cluster.stop
        const stoppedAt = Date.now()
        const readyz = MeshClient.request(`${cp.url}/readyz`)
        const down = yield* poll(readyz, (a) => a.status === 503, {
          what: "/readyz 503 with postgres stopped",
          timeout: Duration.seconds(10),
        })
        expect(errorBody(down)).toEqual(UNAVAILABLE)
        const healthz = yield* MeshClient.request(`${cp.url}/healthz`)
        expect([healthz.status, text(healthz)]).toEqual([200, '{"status":"ok"}'])
        // /info is answered from memory for at most a few seconds, then needs the database like the others.
        yield* poll(MeshClient.request(`${cp.url}/info`), (a) => a.status === 503, {
          what: "/info 503 once its cached answer is too old",
          timeout: Duration.seconds(10),
        })
        // Enough traffic of every kind while postgres is down.
        yield* poll(
          Effect.sync(() => kinds.map((k) => load.sent.filter((s) => s.kind === k && s.started >= stoppedAt).length)),
          (n) => n.every((x) => x >= 3),
          { what: "requests of every kind while postgres is down", timeout: Duration.seconds(30) },
        )

        const restartAt = Date.now()
        yield* cluster.start
        yield* poll(readyz, (a) => a.status === 200, { what: "/readyz 200 again", timeout: Duration.seconds(30) })
        const resumed = yield* poll(
          admin(cp, "POST", "/admin/bootstrap-tokens", { role: "mesh:role:node" }),
          (a) => a.status === 201,
          { what: "minting works again", timeout: Duration.seconds(30), interval: Duration.millis(200) },
        )
        load.minted.push((resumed.json as MintedToken).id)
        yield* load.stop

        // No request hung or lost its connection.
        expect(load.sent.filter((s) => s.outcome._tag !== "answer").map(describeSent)).toEqual([])
        const answers = load.sent.flatMap((s) =>
          s.outcome._tag === "answer" ? [{ ...s, answer: s.outcome.value }] : [],
        )
        // While postgres was down, every route that needs it answered 503 unavailable.
        const whileDown = answers.filter((s) => s.started >= stoppedAt && s.ended <= restartAt)
        for (const kind of ["enroll", "mint", "list"] as const) {
          const ofKind = whileDown.filter((s) => s.kind === kind)
          expect(ofKind.length, kind).toBeGreaterThan(0)
          expect(ofKind.filter((s) => !isUnavailable(s.answer)).map(describeSent)).toEqual([])
        }
        // /info (cached for a few seconds) and /keys (served from memory) answer 200 or 503.
        for (const kind of ["info", "keys"] as const) {
          const statuses = whileDown.filter((s) => s.kind === kind).map((s) => s.answer.status)
          expect(statuses.length, kind).toBeGreaterThan(0)
          expect(
            statuses.every((s) => s === 200 || s === 503),
            `${kind}: ${statuses.join(",")}`,
          ).toBe(true)
        }
        expect(yield* cp.running).toBe(true)

        // Everything works again, and every token whose mint was acknowledged is still there.
        expect((yield* MeshClient.enroll(cp.url, PeerKey.generate(), load.enrollToken.token)).status).toBe(200)
        expect((yield* MeshClient.request(`${cp.url}/info`)).status).toBe(200)
        const acknowledgedBeforeStop = load.sent.filter(
          (s) =>
            s.kind === "mint" && s.ended < stoppedAt && s.outcome._tag === "answer" && s.outcome.value.status === 201,
        )
        expect(acknowledgedBeforeStop.length).toBeGreaterThanOrEqual(5)
        const listed = yield* admin(cp, "GET", "/admin/bootstrap-tokens")
        const listedIds = new Set((listed.json as ReadonlyArray<{ readonly id: string }>).map((t) => t.id))
        expect(load.minted.filter((id) => !listedIds.has(id))).toEqual([])
        const stored = new Set(yield* Db.strings(database, "SELECT id FROM bootstrap_tokens"))
        expect(load.minted.filter((id) => !stored.has(id))).toEqual([])

        // No request failed with anything but 503 unavailable, transactions under way when postgres went away
        // included (see "postgres sessions cut under load" below).
        expect(answers.filter((s) => s.answer.status >= 500 && !isUnavailable(s.answer)).map(describeSent)).toEqual([])
      }),
    180_000,
  )

  // When postgres ends a session that a transaction holds (server restart, failover, pg_terminate_backend), the next
  // statement fails with pg's "Client has encountered a connection error and is not queryable", an Error without a
  // code: it must still be recognised as the database being unavailable (503), not a bug (500).
  it.scopedLive(
    "postgres sessions cut under load (restart, failover, pg_terminate_backend) are answered 503, never 500",
    () =>
      Effect.gen(function* () {
        const cluster = yield* PostgresCluster.make
        const database: DatabaseConfig = { driver: "postgres", dsn: Redacted.make(cluster.url) }
        const cp = yield* ControlPlaneProcess.start({ database })
        const load = yield* startLoad(cp, [...Array.from({ length: 10 }, () => "mint" as const), "list", "enroll"])

        // Twenty times, postgres ends every session of the control plane (as a restart or failover does).
        for (let round = 0; round < 20; round++) {
          yield* Db.query(
            database,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mesh-control-plane'",
          )
          yield* Effect.sleep(Duration.millis(100))
        }
        yield* load.stop

        expect(load.sent.filter((s) => s.outcome._tag !== "answer").map(describeSent)).toEqual([])
        const answers = load.sent.flatMap((s) => (s.outcome._tag === "answer" ? [s.outcome.value] : []))
        // The cuts were felt, and between them the control plane worked.
        expect(answers.filter(isUnavailable).length).toBeGreaterThan(0)
        expect(answers.filter((a) => a.status === 201).length).toBeGreaterThan(0)
        const other = answers.filter((a) => a.status >= 300 && !isUnavailable(a))
        expect(
          [...new Set(other.map((a) => `${a.status} ${text(a)}`))].map(
            (kind) => `${other.filter((a) => `${a.status} ${text(a)}` === kind).length} × ${kind}`,
          ),
          "answers other than success or 503 unavailable",
        ).toEqual([])

        // Every acknowledged mint is stored.
        const stored = new Set(yield* Db.strings(database, "SELECT id FROM bootstrap_tokens"))
        expect(load.minted.filter((id) => !stored.has(id))).toEqual([])
      }),
    120_000,
  )
})

// ---------------------------------------------------------------------------------------------------------------
// sqlite locked by another writer

describe("control plane on a sqlite file that another writer holds locked [sqlite]", () => {
  /** A writable connection of the test's own that holds sqlite's write lock until the test ends it. */
  const lockingWriter = (database: DatabaseConfig) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const writer = new Db.Sqlite(Redacted.value(database.dsn), { fileMustExist: true })
        writer.exec("BEGIN EXCLUSIVE")
        return writer
      }),
      (writer) => Effect.sync(() => writer.close()),
    )
  const mint = (cp: ControlPlaneProcess.ControlPlaneProcess) =>
    admin(cp, "POST", "/admin/bootstrap-tokens", { role: "mesh:role:node" })

  it.scopedLive(
    "a write answers 503 within the bound and the process stays up; it succeeds once the lock is released",
    () =>
      Effect.gen(function* () {
        const database = yield* TestDatabase.sqliteFile
        const cp = yield* ControlPlaneProcess.start({ database })
        const before = yield* mintToken(cp)

        const writer = yield* lockingWriter(database)
        const locked = yield* attempt(mint(cp), Duration.seconds(15))
        if (locked._tag !== "answer") {
          return yield* Effect.dieMessage(`no answer within 15 s: ${JSON.stringify(locked)}`)
        }
        expect([locked.value.status, locked.value.json]).toEqual([
          503,
          { error: "unavailable", message: "database is locked by another writer" },
        ])
        expect(locked.value.headers.get("retry-after")).toBe("1")
        expect(yield* cp.running).toBe(true)
        const healthz = yield* MeshClient.request(`${cp.url}/healthz`)
        expect(healthz.status).toBe(200)

        writer.exec("ROLLBACK")
        const after = yield* mintToken(cp)

        // The refused mint left nothing behind: neither a token nor its audit entry.
        const ids = yield* Db.strings(database, "SELECT id FROM bootstrap_tokens")
        expect(new Set(ids)).toEqual(new Set([before.id, after.id]))
        const counts = yield* Db.numbers(
          database,
          "SELECT COUNT(*) AS minted FROM audit_log WHERE action = 'token.minted'",
        )
        expect(counts).toEqual({ minted: 2 })
      }),
    60_000,
  )

  // better-sqlite3 runs statements synchronously on the event loop: a write that waited out sqlite's busy timeout
  // inside the driver would freeze the whole process, health probes included. SqliteClientLive waits with Effect
  // sleeps instead; /healthz and /keys, which need no database, must answer meanwhile.
  it.scopedLive(
    "while a write waits for the lock, the process still answers /healthz and /keys",
    () =>
      Effect.gen(function* () {
        const database = yield* TestDatabase.sqliteFile
        const cp = yield* ControlPlaneProcess.start({ database })
        const writer = yield* lockingWriter(database)

        const blocked = yield* Effect.fork(attempt(mint(cp), Duration.seconds(15)))
        // The process says when a statement starts waiting for the lock: from then on the mint waits at the database.
        yield* poll(cp.output, (text) => text.includes("sqlite database is locked by another writer; waiting"), {
          what: "the mint waiting for the sqlite lock",
          timeout: Duration.seconds(15),
        })
        const [healthz, keys] = yield* Effect.all(
          [attempt(MeshClient.request(`${cp.url}/healthz`)), attempt(MeshClient.request(`${cp.url}/keys`))],
          { concurrency: 2 },
        )
        const mintDone = Option.isSome(yield* Fiber.poll(blocked))
        // The lock is held until the write gives up, so it is refused however the wait is implemented.
        const refused = yield* Fiber.join(blocked)
        writer.exec("ROLLBACK")
        expect(refused._tag === "answer" ? refused.value.status : refused._tag).toBe(503)
        expect(yield* Db.numbers(database, "SELECT COUNT(*) AS tokens FROM bootstrap_tokens")).toEqual({ tokens: 0 })

        expect([healthz._tag, keys._tag]).toEqual(["answer", "answer"])
        expect(
          mintDone,
          "/healthz and /keys were answered only after the write waiting for the sqlite lock gave up",
        ).toBe(false)
      }),
    60_000,
  )
})
