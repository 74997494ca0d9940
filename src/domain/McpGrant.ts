/**
 * What a grant on an MCP service lets a caller do, read from the JSON-RPC it sends. `allowed_services` names a whole
 * server (`mcp://docs`) or single tools (`mcp://docs/search`); MCP always arrives on the service's own endpoint, so a
 * tool grant is checked against the messages, not the HTTP path. The serving side's proxy applies it today; agent
 * scopes will apply the same rules. Pure: no I/O.
 */
import * as Policy from "./Policy.js"

/** The whole service, or only the tools named. */
export type Grant = { readonly _tag: "Service" } | { readonly _tag: "Tools"; readonly tools: ReadonlySet<string> }

export const SERVICE: Grant = { _tag: "Service" }

export type Decision =
  | { readonly _tag: "Allowed"; readonly grant: Grant }
  | { readonly _tag: "Denied"; readonly rule: Policy.DeniedBy; readonly reason: string }

/** JSON-RPC error code of a message the policy refuses (implementation-defined server error range). */
export const DENIED_CODE = -32003

/** Methods any holder of a grant on the service may send: session set-up, liveness and the (filtered) tool list. */
const ALWAYS = new Set(["initialize", "ping", "tools/list"])

/** A pattern's service part and path: `mcp://docs/search` → docs, `/search`. */
const split = (pattern: string): { readonly head: string; readonly path: string } => {
  const sep = pattern.indexOf("://")
  const slash = sep === -1 ? -1 : pattern.indexOf("/", sep + 3)
  return slash === -1 ? { head: pattern, path: "" } : { head: pattern.slice(0, slash), path: pattern.slice(slash) }
}

/** The grant a pattern gives on the MCP service `name`, if it names it at all. */
const grantOf = (pattern: string, name: string): Grant | string | undefined => {
  if (pattern === "*") return SERVICE
  const { head, path } = split(pattern)
  if (!Policy.serviceMatches(head, { type: "mcp", name, path: "" })) return undefined
  return path === "" || path === "/" ? SERVICE : path.slice(1).replace(/\/$/, "")
}

/**
 * The serving side's decision for an MCP service: allowed when a role of the caller names the service (whole or some
 * of its tools) and targets this peer; the grant is the union of what those roles name.
 */
export const authorize = (
  doc: Policy.Document | undefined,
  roles: ReadonlySet<string>,
  name: string,
  self: Policy.Subject,
  issuers: Policy.Issuers,
): Decision => {
  const wanted = `mcp://${name}`
  if (doc === undefined) {
    return { _tag: "Denied", rule: "no_policy", reason: "this peer has no copy of the mesh policy yet" }
  }
  const held = doc.roles.filter((r) => roles.has(r.name))
  const serving = held.filter((r) => r.allowedServices.some((p) => grantOf(p, name) !== undefined))
  if (serving.length === 0) {
    return {
      _tag: "Denied",
      rule: "allowed_services",
      reason: `no role of the caller (${[...roles].sort().join(", ")}) lists ${wanted} or any of its tools`,
    }
  }
  const targeting = serving.filter((r) => r.allowedTargets.some((p) => Policy.targetMatches(p, self, issuers)))
  if (targeting.length === 0) {
    return {
      _tag: "Denied",
      rule: "allowed_targets",
      reason: `no role of the caller that lists ${wanted} (${serving.map((r) => r.name).join(", ")}) targets this peer`,
    }
  }
  const tools = new Set<string>()
  for (const pattern of targeting.flatMap((r) => r.allowedServices)) {
    const grant = grantOf(pattern, name)
    if (grant === undefined) continue
    if (typeof grant !== "string") return { _tag: "Allowed", grant }
    tools.add(grant)
  }
  return { _tag: "Allowed", grant: { _tag: "Tools", tools } }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The id of a JSON-RPC request, or undefined for a notification or a response. */
export const requestId = (message: unknown): string | number | null | undefined =>
  isObject(message) && typeof message.method === "string" && "id" in message
    ? (message.id as string | number | null)
    : undefined

/** How a refusal names what refused it: a policy grant, or an agent's scope (AgentScope). */
export interface Wording {
  /** `policy rule allowed_services`, `scope rule scope.tools`. */
  readonly rule: string
  /** Who lacks the tool: `no role of the caller lists`. */
  readonly lacking: string
}

export const POLICY: Wording = { rule: "policy rule allowed_services", lacking: "no role of the caller lists" }

/** The intersection of two grants on one service: what both let through. */
export const intersect = (a: Grant, b: Grant): Grant =>
  a._tag === "Service"
    ? b
    : b._tag === "Service"
      ? a
      : { _tag: "Tools", tools: new Set([...a.tools].filter((t) => b.tools.has(t))) }

/**
 * Whether the grant lets one message from the caller through: the reason it does not, else undefined. Notifications
 * and responses (answers to the server's own requests) always pass; a request needs its method allowed, and
 * `tools/call` a grant of the tool it names.
 */
export const refusal = (
  grant: Grant,
  name: string,
  message: unknown,
  wording: Wording = POLICY,
): string | undefined => {
  if (grant._tag === "Service") return undefined
  if (!isObject(message) || typeof message.method !== "string" || !("id" in message)) return undefined
  const method = message.method
  if (ALWAYS.has(method)) return undefined
  if (method === "tools/call") {
    const tool = isObject(message.params) ? message.params.name : undefined
    if (typeof tool === "string" && grant.tools.has(tool)) return undefined
    const shown = typeof tool === "string" ? tool.slice(0, 128) : "(none)"
    return `denied by ${wording.rule}: ${wording.lacking} the tool mcp://${name}/${shown}`
  }
  return `denied by ${wording.rule}: a grant of single tools of mcp://${name} does not allow ${method.slice(0, 64)}`
}

/** The JSON-RPC error answering a refused request. */
export const deniedAnswer = (id: string | number | null, reason: string, rule = "allowed_services") => ({
  jsonrpc: "2.0" as const,
  id,
  error: { code: DENIED_CODE, message: reason, data: { rule } },
})

/**
 * A message from the server as the caller may see it: a result holding a `tools` list (a `tools/list` answer) keeps
 * only the granted tools. Undefined when nothing changes.
 */
export const filterAnswer = (grant: Grant, message: unknown): unknown => {
  if (grant._tag === "Service" || !isObject(message) || !isObject(message.result)) return undefined
  const tools = message.result.tools
  if (!Array.isArray(tools)) return undefined
  const kept = tools.filter((tool) => isObject(tool) && typeof tool.name === "string" && grant.tools.has(tool.name))
  return { ...message, result: { ...message.result, tools: kept } }
}
