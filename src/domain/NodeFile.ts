/**
 * The node's configuration file (`mesh-node.yaml`): the labels it asks to attest, the operator's egress floor and the
 * services it publishes. Decoded strictly: an unknown key or a bad value is an error naming the key, never ignored,
 * because a typo in a floor or a service would otherwise widen what the node allows without a word.
 */
import { Duration, Either, ParseResult, Schema } from "effect"
import { parse as parseYaml } from "yaml"
import * as AgentScope from "./AgentScope.js"
import * as GoDuration from "./GoDuration.js"
import * as Labels from "./Labels.js"
import { SERVICE_NAME } from "./ServiceName.js"
import { SERVICE_TYPES } from "./ServiceType.js"
import * as ToolPinning from "./ToolPinningMode.js"

// Service names travel in URLs (`/mesh/<peer>/<type>/<name>`) and tool names (`mcp://<name>/<tool>`).
export { isServiceName } from "./ServiceName.js"

/** Processes a command service runs at once when `max_processes` is not given, and the most it may ask for. */
export const DEFAULT_MAX_PROCESSES = 8
const MAX_PROCESSES_LIMIT = 256
const MAX_PROCESSES_MESSAGE = `must be a whole number from 1 to ${MAX_PROCESSES_LIMIT}`

/** `max_response_bytes`: below 64 KiB an ordinary answer's head and a tool list would not fit. */
export const MIN_RESPONSE_BYTES = 64 * 1024
const RESPONSE_BYTES_MESSAGE = `must be a whole number of bytes, at least ${MIN_RESPONSE_BYTES}`

export const isResponseCap = (n: number): boolean => Number.isSafeInteger(n) && n >= MIN_RESPONSE_BYTES

const LabelMap = Schema.Record({ key: Schema.String, value: Schema.String }).pipe(
  Schema.filter((labels) => Either.match(Labels.validate(labels), { onLeft: (reason) => reason, onRight: () => true })),
)

const HttpUrl = Schema.String.pipe(
  Schema.filter((text) => {
    try {
      const url = new URL(text)
      return url.protocol === "http:" || url.protocol === "https:" ? true : "must be an http or https URL"
    } catch {
      return "must be an http or https URL"
    }
  }),
)

const ServiceEntry = Schema.Struct({
  name: Schema.String.pipe(
    Schema.filter((name) => SERVICE_NAME.test(name) || "must be 1-64 letters, digits, '.', '_' or '-'"),
  ),
  // A union of literals reports each member's own "Expected ..." unless the union's message overrides them.
  type: Schema.Literal(...SERVICE_TYPES).annotations({
    message: () => ({ message: `must be one of ${SERVICE_TYPES.join(", ")}`, override: true }),
  }),
  description: Schema.optionalWith(Schema.String, { default: () => "" }),
  target_url: Schema.optional(HttpUrl),
  /** A stdio MCP server the node runs itself: argv, first the program. */
  command: Schema.optional(Schema.NonEmptyArray(Schema.String)),
  env: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) }),
  /** A command service: how many of its processes may run at once (one per caller session); DEFAULT_MAX_PROCESSES. */
  max_processes: Schema.optional(
    Schema.Number.annotations({ message: () => MAX_PROCESSES_MESSAGE }).pipe(
      Schema.filter((n) => Number.isInteger(n) && n >= 1 && n <= MAX_PROCESSES_LIMIT, {
        message: () => MAX_PROCESSES_MESSAGE,
      }),
    ),
  ),
}).pipe(
  Schema.filter((s) => {
    if (s.command !== undefined && s.type !== "mcp")
      return { path: ["command"], message: "only mcp services run a command" }
    if (s.max_processes !== undefined && s.command === undefined) {
      return { path: ["max_processes"], message: "applies only to a service that runs a command" }
    }
    if (Object.keys(s.env).length > 0 && s.command === undefined) {
      return { path: ["env"], message: "applies only to a service that runs a command" }
    }
    if ((s.command === undefined) === (s.target_url === undefined)) {
      return { path: ["target_url"], message: "give exactly one of target_url or command" }
    }
    return true
  }),
)

/** What a changed tool definition does (domain/ToolPinning): `enforce`, `warn` or `off`. */
const ToolPinningMode = Schema.Literal(...ToolPinning.MODES)

/** `mcp://<service>` or `mcp://<service>/<tool>`: remote tools this node's `/mcp` lists as its own. */
const FederatePattern = Schema.String.pipe(
  Schema.filter((text) => {
    const rest = text.startsWith("mcp://") ? text.slice("mcp://".length) : undefined
    const slash = rest?.indexOf("/") ?? -1
    const service = rest === undefined ? "" : slash === -1 ? rest : rest.slice(0, slash)
    const tool = rest === undefined || slash === -1 ? undefined : rest.slice(slash + 1)
    return (
      (SERVICE_NAME.test(service) && (tool === undefined || (tool.length > 0 && tool.length <= 256))) ||
      "must be mcp://<service> or mcp://<service>/<tool>"
    )
  }),
)

const FederateEntry = Schema.Union(
  FederatePattern,
  Schema.Struct({
    tools: FederatePattern,
    /** Only peers whose credential attests every pair. */
    peer_labels: Schema.optionalWith(LabelMap, { default: () => ({}) }),
    /** Overrides the node's `tool_pinning` for this service's tools. */
    tool_pinning: Schema.optional(ToolPinningMode),
  }),
)
/**
 * An agent the node mints a token for itself (`agents:`): its id and scope, how long each token lasts (cut to the
 * node credential's expiry; minted again at half of it and whenever the credential changes) and the file the token
 * is written to, 0600 (relative paths are in the data folder).
 */
const AgentEntry = Schema.Struct({
  id: AgentScope.AgentId,
  ...AgentScope.ScopeFields,
  ttl: Schema.optionalWith(
    Schema.String.pipe(
      Schema.filter((text) =>
        Either.match(GoDuration.parse(text), {
          onLeft: (reason) => reason,
          onRight: (d) => (Duration.toMillis(d) >= 60_000 ? true : "must be at least 1m"),
        }),
      ),
    ),
    { default: () => "24h" },
  ),
  token_file: Schema.String.pipe(Schema.minLength(1)),
})

export const NodeFileSchema = Schema.Struct({
  labels: Schema.optionalWith(LabelMap, { default: () => ({}) }),
  egress: Schema.optionalWith(
    Schema.Struct({ require_labels: Schema.optionalWith(LabelMap, { default: () => ({}) }) }),
    { default: () => ({ require_labels: {} }) },
  ),
  services: Schema.optionalWith(Schema.Array(ServiceEntry), { default: () => [] }),
  /** Remote MCP tools listed on this node's `/mcp` beside its own (none unless asked: federation is opt-in). */
  federate: Schema.optional(Schema.Array(FederateEntry)),
  agents: Schema.optional(Schema.Array(AgentEntry).pipe(Schema.maxItems(256))),
  /** For every service whose `federate:` entry says nothing: enforce (the default), warn or off. */
  tool_pinning: Schema.optional(ToolPinningMode),
  /** The most bytes read from a peer per response; the `--max-response-bytes` flag overrides it. */
  max_response_bytes: Schema.optional(
    Schema.Number.annotations({ message: () => RESPONSE_BYTES_MESSAGE }).pipe(
      Schema.filter(isResponseCap, { message: () => RESPONSE_BYTES_MESSAGE }),
    ),
  ),
}).pipe(
  Schema.filter((file) => {
    const seen = new Set<string>()
    for (const [i, s] of file.services.entries()) {
      const key = `${s.type}/${s.name}`
      if (seen.has(key)) return { path: ["services", i, "name"], message: `duplicate ${s.type} service ${s.name}` }
      seen.add(key)
    }
    const agents = new Set<string>()
    for (const [i, a] of (file.agents ?? []).entries()) {
      if (agents.has(a.id)) return { path: ["agents", i, "id"], message: `duplicate agent ${a.id}` }
      agents.add(a.id)
    }
    return true
  }),
)

export type NodeFile = typeof NodeFileSchema.Type
export type ServiceSpec = NodeFile["services"][number]

export const empty: NodeFile = { labels: {}, egress: { require_labels: {} }, services: [] }
export type AgentSpec = NonNullable<NodeFile["agents"]>[number]

/** The first problem, as `key.path: reason`, one line. */
const describeIssue = (error: ParseResult.ParseError): string => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  if (issue === undefined) return "invalid configuration"
  const path = issue.path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
  const where = path.join("")
  const message = issue.message.split("\n")[0] ?? "invalid"
  return where.length > 0 ? `${where}: ${message}` : message
}

/** Parses YAML text; an empty document is the empty configuration. */
export const parse = (text: string): Either.Either<NodeFile, string> => {
  const document = Either.try({
    try: () => parseYaml(text, { strict: true, uniqueKeys: true }) as unknown,
    catch: (error) => `not valid YAML: ${(error as Error).message.split("\n")[0]}`,
  })
  return Either.flatMap(document, (value) =>
    value === null || value === undefined
      ? Either.right(empty)
      : Either.mapLeft(
          Schema.decodeUnknownEither(NodeFileSchema, { onExcessProperty: "error", errors: "first" })(value),
          describeIssue,
        ),
  )
}
