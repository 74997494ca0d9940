/**
 * The local side's line of an agent's call, from what the node saw of it: the status, and the rule a refusal named
 * (`denied by scope rule scope.tools`, `denied by policy rule allowed_services`, in our refusals and a serving
 * peer's alike). Runs only for requests made for an agent.
 */
import { Clock, Effect, Option } from "effect"
import { AgentLog, type Outcome } from "../../services/agents/AgentLog.js"
import { CurrentAgent } from "../../services/agents/CurrentAgent.js"

const RULE = /denied by (?:scope|policy) rule ([a-z_.]+)/

/** The rule a refusal's text names, if any. */
export const ruleIn = (text: string): string | undefined => RULE.exec(text)?.[1]

export interface Seen {
  readonly peer: string
  readonly service: string
  readonly target: string
  readonly status: number
  /** The refusal's text, when there was one: its rule is logged, never the text. */
  readonly refusal?: string
  readonly startedMs: number
  readonly bytesIn: number
  readonly bytesOut: number
}

/** A 403 without a rule we could read is a refusal all the same (a serving peer's, whose body streamed past us). */
export const outcomeOf = (status: number, rule: string | undefined): Outcome =>
  rule !== undefined || status === 403 ? "denied" : status >= 400 ? "error" : "allowed"

/** Records the call when the request is an agent's; nothing otherwise. */
export const record = (seen: Seen): Effect.Effect<void, never, AgentLog> =>
  Effect.gen(function* () {
    const agent = yield* Effect.serviceOption(CurrentAgent)
    if (Option.isNone(agent)) return
    const log = yield* AgentLog
    const rule = seen.refusal === undefined ? undefined : ruleIn(seen.refusal)
    yield* log.record({
      agent: agent.value.scope.agent,
      side: "local",
      peer: seen.peer,
      service: seen.service,
      target: seen.target,
      outcome: outcomeOf(seen.status, rule),
      rule: rule ?? (seen.status === 403 ? "serving_peer" : seen.status >= 400 ? `http_${seen.status}` : ""),
      status: seen.status,
      duration_ms: (yield* Clock.currentTimeMillis) - seen.startedMs,
      bytes_in: seen.bytesIn,
      bytes_out: seen.bytesOut,
    })
  })
