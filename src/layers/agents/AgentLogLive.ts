/**
 * The call log as JSON lines in `<data-dir>/agents/calls.log`, 0600. Past MAX_BYTES the file is renamed
 * `calls.log.1` (older ones shifted, KEEP kept) and a new one started; a read looks through all of them. Lines are
 * written whole by one synchronous append each, so a reader never sees half a line. Each local call also counts in
 * `mesh_node_agent_calls_total{agent,outcome}`, where agents not configured in `agents:` count as `other`: the
 * series stay as few as the operator's list, however many tokens are minted from the CLI.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync } from "node:fs"
import { join } from "node:path"
import { Clock, Effect, Either, Layer, Ref, Schema } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import { AgentLog, Entry } from "../../services/agents/AgentLog.js"
import { Metrics } from "../../services/operations/Metrics.js"

export const FILE = "calls.log"
export const MAX_BYTES = 4 * 1024 * 1024
export const KEEP = 3

const decodeEntry = Schema.decodeUnknownEither(Schema.parseJson(Entry))

export const make = (folder: string, configured: ReadonlySet<string>, maxBytes = MAX_BYTES) =>
  Effect.gen(function* () {
    const metrics = yield* Metrics
    const calls = metrics.counter(
      "mesh_node_agent_calls_total",
      "Calls made by this node's agents, by agent (configured ids; others as 'other') and outcome.",
    )
    const path = join(folder, FILE)
    const size = yield* Ref.make(existsSync(path) ? statSync(path).size : 0)

    const rotate = () => {
      for (let i = KEEP - 1; i >= 1; i--) {
        const from = `${path}.${i}`
        if (existsSync(from)) renameSync(from, `${path}.${i + 1}`)
      }
      if (existsSync(path)) renameSync(path, `${path}.1`)
    }

    const record: AgentLog["Type"]["record"] = (call) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const line = `${JSON.stringify({ time: new Date(now).toISOString(), ...call })}\n`
        const bytes = Buffer.byteLength(line)
        const full = yield* Ref.modify(size, (n) =>
          n + bytes > maxBytes && n > 0 ? [true, bytes] : [false, n + bytes],
        )
        yield* Effect.try(() => {
          mkdirSync(folder, { recursive: true, mode: 0o700 })
          if (full) rotate()
          appendFileSync(path, line, { mode: 0o600 })
        }).pipe(Effect.catchAll((error) => Effect.logWarning("the agents' call log could not be written", error)))
        if (call.side === "local") {
          calls.inc({ agent: configured.has(call.agent) ? call.agent : "other", outcome: call.outcome })
        }
      })

    const read: AgentLog["Type"]["read"] = (filter) =>
      Effect.sync(() => {
        const files = [...Array.from({ length: KEEP }, (_, i) => `${path}.${KEEP - i}`), path]
        const out: Array<Entry> = []
        for (const file of files) {
          if (!existsSync(file)) continue
          for (const line of readFileSync(file, "utf8").split("\n")) {
            if (line.length === 0) continue
            const entry = decodeEntry(line)
            if (Either.isLeft(entry)) continue
            const e = entry.right
            if (filter.agent !== undefined && e.agent !== filter.agent) continue
            const at = Date.parse(e.time)
            if (filter.sinceMs !== undefined && at < filter.sinceMs) continue
            if (filter.untilMs !== undefined && at > filter.untilMs) continue
            out.push(e)
          }
        }
        return out.slice(-filter.limit)
      })

    return AgentLog.of({ record, read })
  })

export const layer = Layer.effect(
  AgentLog,
  Effect.flatMap(NodeConfig, (settings) =>
    make(join(settings.dataDir, "agents"), new Set((settings.file.agents ?? []).map((a) => a.id))),
  ),
)
