/**
 * What an agent may do through its node: the scope carried by an agent token (crypto/AgentToken). An agent names
 * itself by an id; its scope lists service patterns (`type://name[/path]`, as `allowed_services`), tools
 * (`mcp://<service>/<tool>`, or `mcp://<service>/*`), models (an id, or a prefix ending in `*`), HTTP methods and
 * paths below a service (empty: any), and labels every serving peer must attest. A request is allowed only when the
 * scope covers it; the refusal names the rule that did not. Pure: no I/O.
 */
import { Either, Schema } from "effect"
import * as Labels from "./Labels.js"
import * as McpGrant from "./McpGrant.js"
import * as Policy from "./Policy.js"
import type { ServiceType } from "./ServiceType.js"

/** Lower-case letters, digits, `.`, `_`, `-`: safe in a metric label, a log line and a header. */
export const AGENT_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/

/** Patterns: printable ASCII without quotes, backslashes or spaces, so they print on one line of a biscuit block. */
const PATTERN = /^[\x21\x23-\x5b\x5d-\x7e]{1,256}$/
const METHOD = /^[A-Z]{1,16}$/
/** At most this many entries per list: a token stays small, a check stays short. */
export const MAX_ENTRIES = 64

export const AgentId = Schema.String.pipe(
  Schema.pattern(AGENT_ID, {
    message: () => "an agent id is 1-64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit",
  }),
)

const Pattern = Schema.String.pipe(
  Schema.pattern(PATTERN, { message: () => "a scope pattern is 1-256 printable characters without quotes or spaces" }),
)
const List = <A, I>(item: Schema.Schema<A, I>) =>
  Schema.Array(item).pipe(Schema.maxItems(MAX_ENTRIES, { message: () => `at most ${MAX_ENTRIES} entries` }))

/** The lists of a scope, as an operator writes them (the request body, `agents:` in mesh-node.yaml). */
export const ScopeFields = {
  services: Schema.optionalWith(List(Pattern), { default: () => [] }),
  tools: Schema.optionalWith(List(Pattern), { default: () => [] }),
  models: Schema.optionalWith(List(Pattern), { default: () => [] }),
  methods: Schema.optionalWith(
    List(Schema.String.pipe(Schema.pattern(METHOD, { message: () => "a method is an upper-case HTTP method" }))),
    { default: () => [] },
  ),
  paths: Schema.optionalWith(List(Pattern), { default: () => [] }),
  labels: Schema.optionalWith(Schema.Record({ key: Pattern, value: Pattern }), { default: () => ({}) }),
}

/** The scope an operator asks for; the expiry is added when the token is minted. */
export const Request = Schema.Struct({ agent: AgentId, ...ScopeFields })
export type Request = typeof Request.Type

export interface Scope extends Request {
  /** Unix milliseconds, whole seconds. */
  readonly expiresAtMs: number
}

/** Which rule of the scope refused a request: the name a refusal, the call log and the metric carry. */
export type Rule = "scope.services" | "scope.tools" | "scope.models" | "scope.methods" | "scope.paths" | "scope.labels"

export type Decision =
  | { readonly _tag: "Allowed" }
  | { readonly _tag: "Denied"; readonly rule: Rule; readonly reason: string }

const allowed: Decision = { _tag: "Allowed" }
const denied = (scope: Scope, rule: Rule, reason: string): Decision => ({
  _tag: "Denied",
  rule,
  reason: `agent ${scope.agent}: denied by scope rule ${rule}: ${reason}`,
})

/** A glob with at most a trailing `*`: `*`, `gpt-*`, or an exact name. */
const globMatches = (pattern: string, value: string): boolean =>
  pattern.endsWith("*") ? value.startsWith(pattern.slice(0, -1)) : pattern === value

/** A path pattern: exact, or a prefix ending in `*` (`/v1/*`). */
const pathMatches = (pattern: string, path: string): boolean => globMatches(pattern, path.length === 0 ? "/" : path)

/** A tool pattern's service and tool: `mcp://docs/search` → docs, search. */
const toolParts = (pattern: string): { readonly service: string; readonly tool: string } | undefined => {
  if (!pattern.startsWith("mcp://")) return undefined
  const rest = pattern.slice("mcp://".length)
  const slash = rest.indexOf("/")
  if (slash <= 0 || slash === rest.length - 1) return undefined
  return { service: rest.slice(0, slash), tool: rest.slice(slash + 1) }
}

const toolServiceMatches = (patternService: string, name: string) => globMatches(patternService, name)

/**
 * What the scope grants on the MCP service `name`: the whole service (a service pattern covers it, or a tool pattern
 * `mcp://name/*`), its tools named, or nothing.
 */
export const mcpGrant = (scope: Scope, name: string): McpGrant.Grant | undefined => {
  if (scope.services.some((p) => Policy.serviceMatches(p, { type: "mcp", name, path: "" }))) return McpGrant.SERVICE
  const tools = new Set<string>()
  for (const pattern of scope.tools) {
    const parts = toolParts(pattern)
    if (parts === undefined || !toolServiceMatches(parts.service, name)) continue
    if (parts.tool === "*") return McpGrant.SERVICE
    tools.add(parts.tool)
  }
  return tools.size > 0 ? { _tag: "Tools", tools } : undefined
}

/** How a refusal of a tool by the agent's scope reads in a JSON-RPC error. */
export const wording = (scope: Scope): McpGrant.Wording => ({
  rule: "scope rule scope.tools",
  lacking: `agent ${scope.agent}'s scope does not list`,
})

/** Whether a tool of an MCP service is in scope. */
export const toolAllowed = (scope: Scope, service: string, tool: string): Decision => {
  const grant = mcpGrant(scope, service)
  if (grant !== undefined && (grant._tag === "Service" || grant.tools.has(tool))) return allowed
  return denied(scope, "scope.tools", `mcp://${service}/${tool.slice(0, 128)} is not in this agent's scope`)
}

/** Whether a model is in scope. */
export const modelAllowed = (scope: Scope, model: string): Decision =>
  scope.models.some((p) => globMatches(p, model))
    ? allowed
    : denied(scope, "scope.models", `model ${model.slice(0, 128)} is not in this agent's scope`)

/** The labels of the scope the peer does not attest (every one is required). */
export const labelsAllowed = (scope: Scope, peerLabels: Readonly<Record<string, string>>): Decision => {
  const lacking = Labels.missing(peerLabels, scope.labels)
  return lacking.length === 0
    ? allowed
    : denied(scope, "scope.labels", `the serving peer does not attest ${lacking.join(",")}`)
}

export interface ServiceCall {
  readonly type: ServiceType
  readonly name: string
  readonly method: string
  /** The canonical path below the service (`""` or `/...`). */
  readonly path: string
}

/**
 * A request to a service on a peer, by the proxy route or from inside the node: the service must be in scope (an MCP
 * service also by its tools: the JSON-RPC is then checked tool by tool with `mcpGrant`; an inference service also by
 * the agent's models, checked on the body where the model is read), then the method and the path.
 */
export const serviceAllowed = (scope: Scope, call: ServiceCall): Decision => {
  const byService = scope.services.some((p) => Policy.serviceMatches(p, call))
  const byTools = call.type === "mcp" && mcpGrant(scope, call.name) !== undefined
  const byModels = call.type === "inference" && scope.models.length > 0
  if (!byService && !byTools && !byModels) {
    return denied(scope, "scope.services", `${call.type}://${call.name} is not in this agent's scope`)
  }
  if (scope.methods.length > 0 && !scope.methods.includes(call.method.toUpperCase())) {
    return denied(scope, "scope.methods", `method ${call.method.slice(0, 16)} is not in this agent's scope`)
  }
  if (scope.paths.length > 0 && !scope.paths.some((p) => pathMatches(p, call.path))) {
    return denied(scope, "scope.paths", `path ${call.path.slice(0, 128) || "/"} is not in this agent's scope`)
  }
  return allowed
}

/** Checks a requested scope's patterns beyond their syntax: tool patterns must name a tool of an MCP service. */
export const check = (request: Request): Either.Either<Request, string> => {
  for (const tool of request.tools) {
    if (toolParts(tool) === undefined) return Either.left(`tool pattern ${tool} must be mcp://<service>/<tool>`)
  }
  for (const service of request.services) {
    if (service !== "*" && !service.includes("://")) {
      return Either.left(`service pattern ${service} must be <type>://<name>[/path] or *`)
    }
  }
  return Either.right(request)
}
