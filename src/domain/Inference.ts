/**
 * Inference routing as pure rules: what a completion request must hold, which providers of a model may serve it and
 * in what order, which answers send the request on to the next provider, what crosses to a provider, and how token
 * counts are read back from an answer. The router (src/layers/inference/) applies them; nothing here does I/O.
 */
import { Either } from "effect"
import * as Forwarding from "./Forwarding.js"
import * as Labels from "./Labels.js"

/** The completion routes and the path a provider serves each under. */
export const COMPLETION_PATHS = ["/v1/chat/completions", "/v1/completions"] as const
export type CompletionPath = (typeof COMPLETION_PATHS)[number]

/** Request bodies past this are refused (413): a long chat with images fits, a runaway upload does not. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024

/** Providers tried for one request, at most (fewer when fewer are eligible). */
export const MAX_ATTEMPTS = 3

/**
 * Whether an answer sends the request on to the next provider: busy (429) or failing (any 5xx) anywhere; and from
 * a peer, 403 and 404 too, which its mesh side answers when its policy refuses this node or it no longer serves the
 * model (a provider's backend saying the same also means "not here").
 */
export const passesOver = (status: number, local: boolean): boolean =>
  status === 429 || (status >= 500 && status <= 599) || (!local && (status === 403 || status === 404))

export interface CompletionFields {
  readonly model: string
  readonly stream: boolean
}

/** The fields the node reads from a completion body; the body itself goes to the provider unchanged. */
export const parseCompletion = (body: Uint8Array): Either.Either<CompletionFields, string> => {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8"))
  } catch {
    return Either.left("the request body is not valid JSON")
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return Either.left("the request body must be a JSON object")
  }
  const { model, stream } = value as { model?: unknown; stream?: unknown }
  if (typeof model !== "string" || model.length === 0) {
    return Either.left("you must provide a model parameter")
  }
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") {
    return Either.left("stream must be a boolean")
  }
  return Either.right({ model, stream: stream === true })
}

/** One service that serves a model: on this node (`local`) or on a peer. */
export interface Candidate {
  readonly peerId: string
  readonly service: string
  readonly local: boolean
  /** The labels known for the provider: its credential's when verified, else what it announced. */
  readonly labels: Readonly<Record<string, string>>
  /** Requests it has in flight, as last announced (0 when unknown). */
  readonly load: number
}

/** Cooldowns are per provider and model: one failing model of a backend does not bench its others. */
export const cooldownKey = (candidate: Pick<Candidate, "peerId" | "service">, model: string): string =>
  `${candidate.peerId}/${candidate.service}/${model}`

export interface RankInput {
  readonly model: string
  /** `X-Mesh-Required-Labels`: the provider must attest at least one pair. */
  readonly required: Readonly<Record<string, string>> | undefined
  /** The operator's `egress.require_labels`: the provider must attest every pair. */
  readonly floor: Readonly<Record<string, string>>
  /** When each cooling provider (by `cooldownKey`) may be tried again, in ms. */
  readonly coolingUntil: ReadonlyMap<string, number>
  readonly nowMs: number
  /** A counter that advances per request: rotates the least loaded providers among themselves. */
  readonly turn: number
}

export interface Ranking {
  /** Eligible providers, best first: locals, then remotes by load, the least loaded rotated by `turn`. */
  readonly ordered: ReadonlyArray<Candidate>
  /** How many were left out because they attest none of the required labels or not all of the floor. */
  readonly refusedByLabels: number
  /** The earliest end of a cooldown among the eligible providers left out, if any were. */
  readonly coolingUntilMs: number | undefined
}

const byLoad = (a: Candidate, b: Candidate): number =>
  a.load - b.load || a.peerId.localeCompare(b.peerId) || a.service.localeCompare(b.service)

/** The least loaded at the head of `sorted`, rotated by `turn`, then the rest. */
const rotateHead = (sorted: ReadonlyArray<Candidate>, turn: number): ReadonlyArray<Candidate> => {
  const first = sorted[0]
  if (first === undefined) return sorted
  let equal = 1
  while (equal < sorted.length && sorted[equal]?.load === first.load) equal += 1
  const shift = turn % equal
  return [...sorted.slice(shift, equal), ...sorted.slice(0, shift), ...sorted.slice(equal)]
}

/** Which of `candidates` may serve the request, best first. */
export const rank = (candidates: ReadonlyArray<Candidate>, input: RankInput): Ranking => {
  let refusedByLabels = 0
  let coolingUntilMs: number | undefined
  const eligible: Array<Candidate> = []
  for (const candidate of candidates) {
    const attests =
      (input.required === undefined || Labels.attestsAny(candidate.labels, input.required)) &&
      Labels.missing(candidate.labels, input.floor).length === 0
    if (!attests) {
      refusedByLabels += 1
      continue
    }
    const until = input.coolingUntil.get(cooldownKey(candidate, input.model))
    if (until !== undefined && until > input.nowMs) {
      coolingUntilMs = coolingUntilMs === undefined ? until : Math.min(coolingUntilMs, until)
      continue
    }
    eligible.push(candidate)
  }
  const locals = eligible.filter((c) => c.local).sort(byLoad)
  const remotes = eligible.filter((c) => !c.local).sort(byLoad)
  return {
    ordered: [...rotateHead(locals, input.turn), ...rotateHead(remotes, input.turn)],
    refusedByLabels,
    coolingUntilMs,
  }
}

/**
 * What crosses from the local client to a provider: the end-to-end headers, without the API token (whichever header
 * carried it: `Authorization` is the OpenAI SDK's key for this node, never a provider's), the label requirement,
 * cookies, and `Accept-Encoding` (answers stay plain, so their usage can be read and events pass as they come);
 * the length is that of the body held in memory.
 */
const NOT_TO_PROVIDER = new Set([
  "authorization",
  "x-mesh-authentication",
  Forwarding.REQUIRED_LABELS,
  "cookie",
  "accept-encoding",
  "content-length",
  "host",
])

export const providerHeaders = (headers: Forwarding.Headers, bodyLength: number): Forwarding.OutgoingHeaders => {
  const out = Forwarding.endToEnd(headers, NOT_TO_PROVIDER)
  out["content-length"] = String(bodyLength)
  return out
}

export interface Usage {
  readonly promptTokens: number
  readonly completionTokens: number
}

const count = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0

const usageOf = (value: unknown): Usage | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const usage = (value as { usage?: unknown }).usage
  if (typeof usage !== "object" || usage === null) return undefined
  const { prompt_tokens, completion_tokens } = usage as { prompt_tokens?: unknown; completion_tokens?: unknown }
  return { promptTokens: count(prompt_tokens), completionTokens: count(completion_tokens) }
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The `usage` of a whole JSON answer, if it has one. */
export const usageOfJson = (text: string): Usage | undefined => usageOf(parseJson(text))

/**
 * The `usage` of a streamed answer: the last `data:` event that carries one (OpenAI sends it in the last chunk when
 * asked with `stream_options.include_usage`). `text` is the end of the stream; a cut-off first line is skipped.
 */
export const usageOfEvents = (text: string): Usage | undefined => {
  const lines = text.split("\n")
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = (lines[i] ?? "").trim()
    if (!line.startsWith("data:") || !line.includes('"usage"')) continue
    const usage = usageOf(parseJson(line.slice(5).trim()))
    if (usage !== undefined) return usage
  }
  return undefined
}

export interface ListedModel {
  readonly id: string
  readonly owned_by: string
}

export interface ModelEntry {
  readonly id: string
  readonly object: "model"
  readonly created: number
  readonly owned_by: string
}

/**
 * The union of the models listed, sorted by id, one entry per id: a model this node serves is its own (`local`
 * first), else it belongs to the lowest peer id among those serving it. `created` is 0: the node does not know
 * when a provider's model was made, and the answers stay the same from one listing to the next.
 */
export const modelList = (
  local: ReadonlyArray<ListedModel>,
  remote: ReadonlyArray<ListedModel>,
): ReadonlyArray<ModelEntry> => {
  const owners = new Map<string, string>()
  for (const m of local) if (!owners.has(m.id)) owners.set(m.id, m.owned_by)
  const localIds = new Set(owners.keys())
  for (const m of remote) {
    if (localIds.has(m.id)) continue
    const known = owners.get(m.id)
    if (known === undefined || m.owned_by < known) owners.set(m.id, m.owned_by)
  }
  return [...owners]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, owned_by]) => ({ id, object: "model", created: 0, owned_by }))
}
