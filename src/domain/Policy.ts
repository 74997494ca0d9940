/**
 * The mesh policy: roles (what a holder may carry and reach) and bindings (which identities hold which role).
 * Replaced as a whole; validated before it is stored. Pure rules only: storage is the Policy service's.
 *
 * Members: `mesh:system:authenticated` (any authenticated identity), `node:<peer_id>`, and `user:`, `email:` or
 * `group:` followed by a value that may carry one leading or trailing `*`. An identity member may name its issuer
 * (`user:<issuer>|<sub>`, the spelling of user ids); one that does not names the first configured issuer, so that with
 * several `--issuer`s the same subject, email or group at another issuer inherits nothing.
 */
import { Either } from "effect"
import { isSafeTerm } from "../crypto/Biscuit.js"
import * as Labels from "./Labels.js"
import * as ToolPins from "./ToolPins.js"

export interface Role {
  readonly name: string
  readonly description: string
  readonly allowedTargets: ReadonlyArray<string>
  readonly allowedServices: ReadonlyArray<string>
  readonly allowedLabels: ReadonlyArray<string>
}

export interface Binding {
  readonly role: string
  readonly members: ReadonlyArray<string>
}

export interface Document {
  readonly roles: ReadonlyArray<Role>
  readonly bindings: ReadonlyArray<Binding>
  /** Approved tool definitions (ToolPins); absent in a policy written before pins existed. */
  readonly toolPins?: ReadonlyArray<ToolPins.ToolPin>
}

export const empty: Document = { roles: [], bindings: [] }

export const NODE_ROLE = "mesh:role:node"
export const ROUTER_ROLE = "mesh:role:router"
export const ADMIN_ROLE = "mesh:role:admin"
export const AUTHENTICATED = "mesh:system:authenticated"

/** Who asks for a role: a peer, and for OIDC enrollments the identity behind it. */
export interface Subject {
  readonly peerId?: string
  readonly issuer?: string
  readonly subject?: string
  readonly email?: string
  readonly groups?: ReadonlyArray<string>
}

const MEMBER_PREFIXES = ["node", "user", "email", "group"] as const
const TARGET_FACTS = new Set(["node", "user", "email", "group", "*"])
const SERVICE = /^[a-z][a-z0-9+.-]*:\/\/(\*|\*\.[A-Za-z0-9._-]+|[A-Za-z0-9._-]+(\.\*)?)(\/[A-Za-z0-9._~/-]*)?$/

const checkName = (name: string): string | undefined =>
  name.length === 0
    ? "role name is empty"
    : name.length > 255 || !isSafeTerm(name)
      ? `role name "${name.slice(0, 64)}" holds a forbidden character`
      : undefined

/** The configured `--issuer`s, in order: the first is the one an unqualified identity member names. */
export type Issuers = ReadonlyArray<string>

const withoutSlash = (url: string): string => (url.endsWith("/") ? url.slice(0, -1) : url)

/** The configured spelling of an issuer (trailing slash aside), or undefined when it is not configured. */
const configured = (issuers: Issuers, issuer: string): string | undefined =>
  issuers.find((i) => withoutSlash(i) === withoutSlash(issuer))

type Member =
  | { readonly kind: "authenticated" }
  | { readonly kind: "node"; readonly pattern: string }
  | {
      readonly kind: "user" | "email" | "group"
      /** As written, or undefined when the member names the first issuer by default. */
      readonly issuer: string | undefined
      readonly pattern: string
    }

/** An issuer-qualified value: an http(s) URL up to the first `|` (which no URL holds unescaped), then the value. */
const QUALIFIED = /^(https?:\/\/[^|]+)\|(.*)$/

const parseMember = (member: string): Member | undefined => {
  if (member === AUTHENTICATED) return { kind: "authenticated" }
  const colon = member.indexOf(":")
  const prefix = member.slice(0, colon)
  const value = member.slice(colon + 1)
  if (colon <= 0 || !(MEMBER_PREFIXES as ReadonlyArray<string>).includes(prefix)) return undefined
  if (prefix === "node") return { kind: "node", pattern: value }
  const kind = prefix as "user" | "email" | "group"
  const qualified = QUALIFIED.exec(value)
  return qualified === null
    ? { kind, issuer: undefined, pattern: value }
    : { kind, issuer: qualified[1] as string, pattern: qualified[2] as string }
}

const checkMember = (member: string, issuers: Issuers): string | undefined => {
  const parsed = parseMember(member)
  if (parsed === undefined) {
    return `member "${member}" must be ${AUTHENTICATED} or start with node:, user:, email: or group:`
  }
  if (parsed.kind === "authenticated") return undefined
  const value = parsed.pattern
  if (value.length === 0 || value === "*") return `member "${member}" has no value`
  if (!isSafeTerm(member)) return `member "${member}" holds a forbidden character`
  const stars = value.split("*").length - 1
  if (stars > 1 || (stars === 1 && !value.startsWith("*") && !value.endsWith("*"))) {
    return `member "${member}" may carry one leading or trailing * only`
  }
  if (parsed.kind === "node") return stars > 0 ? `member "${member}": node members take no wildcard` : undefined
  if (parsed.issuer !== undefined && configured(issuers, parsed.issuer) === undefined) {
    return `member "${member}" names issuer "${parsed.issuer}", which is not configured`
  }
  return undefined
}

/**
 * Checks the whole document; the first problem found is the reason, prefixed with where it is in the protojson
 * document (`bindings[1].members[0]: ...`), so a client can point at the line of its file.
 */
export const validate = (doc: Document, issuers: Issuers): Either.Either<Document, string> => {
  const at = (path: string, reason: string) => Either.left(`${path}: ${reason}`)
  const names = new Set<string>()
  for (const [i, role] of doc.roles.entries()) {
    const bad = checkName(role.name)
    if (bad !== undefined) return at(`roles[${i}].name`, bad)
    if (names.has(role.name)) return at(`roles[${i}].name`, `role "${role.name}" is defined twice`)
    names.add(role.name)
    for (const [j, s] of role.allowedServices.entries()) {
      if (s !== "*" && !SERVICE.test(s))
        return at(`roles[${i}].allowed_services[${j}]`, `role "${role.name}": service "${s}" is not * or type://name`)
    }
    for (const [j, t] of role.allowedTargets.entries()) {
      const fact = t.slice(0, t.indexOf(":"))
      if (t !== "*" && (!TARGET_FACTS.has(fact) || t.length <= fact.length + 1 || !isSafeTerm(t))) {
        return at(`roles[${i}].allowed_targets[${j}]`, `role "${role.name}": target "${t}" is not * or fact:value`)
      }
    }
    for (const [j, l] of role.allowedLabels.entries()) {
      if (!Labels.isPattern(l))
        return at(
          `roles[${i}].allowed_labels[${j}]`,
          `role "${role.name}": allowed label "${l}" is not *, key=* or key=value`,
        )
    }
  }
  for (const [i, binding] of doc.bindings.entries()) {
    if (!names.has(binding.role)) return at(`bindings[${i}].role`, `binding names undefined role "${binding.role}"`)
    if (binding.members.length === 0) return at(`bindings[${i}]`, `binding of role "${binding.role}" has no members`)
    for (const [j, member] of binding.members.entries()) {
      const bad = checkMember(member, issuers)
      if (bad !== undefined) return at(`bindings[${i}].members[${j}]`, bad)
    }
  }
  return Either.map(ToolPins.validate(doc.toolPins ?? []), () => doc)
}

const matchValue = (pattern: string, value: string): boolean =>
  pattern.startsWith("*")
    ? value.endsWith(pattern.slice(1))
    : pattern.endsWith("*")
      ? value.startsWith(pattern.slice(0, -1))
      : value === pattern

/** The issuer an identity member names: its own, or the first configured one. */
const issuerOf = (member: { readonly issuer: string | undefined }, issuers: Issuers): string | undefined =>
  member.issuer ?? issuers[0]

/** Whether one binding member names the subject. */
export const memberMatches = (member: string, who: Subject, issuers: Issuers): boolean => {
  const parsed = parseMember(member)
  if (parsed === undefined) return false
  switch (parsed.kind) {
    case "authenticated":
      return true
    case "node":
      return who.peerId === parsed.pattern
    default: {
      const issuer = issuerOf(parsed, issuers)
      if (issuer === undefined || who.issuer === undefined || withoutSlash(who.issuer) !== withoutSlash(issuer)) {
        return false
      }
      switch (parsed.kind) {
        case "user":
          return who.subject !== undefined && matchValue(parsed.pattern, who.subject)
        case "email":
          return who.email !== undefined && matchValue(parsed.pattern, who.email)
        case "group":
          return (who.groups ?? []).some((g) => matchValue(parsed.pattern, g))
      }
    }
  }
}

/** Every role the policy binds to the subject. */
export const rolesOf = (doc: Document, who: Subject, issuers: Issuers): ReadonlySet<string> =>
  new Set(doc.bindings.filter((b) => b.members.some((m) => memberMatches(m, who, issuers))).map((b) => b.role))

/** Union of the `allowed_labels` of the given roles; a role absent from the policy allows none. */
export const allowedLabels = (doc: Document, roles: Iterable<string>): ReadonlyArray<string> => {
  const wanted = new Set(roles)
  return doc.roles.filter((r) => wanted.has(r.name)).flatMap((r) => r.allowedLabels)
}

/** Checks labels against the roles' patterns: the reason names the first label not permitted. */
export const checkLabels = (
  doc: Document,
  roles: Iterable<string>,
  labels: Readonly<Record<string, string>>,
): Either.Either<void, string> => {
  const bad = Labels.firstDisallowed(labels, allowedLabels(doc, roles))
  return bad === undefined ? Either.void : Either.left(`label not permitted: ${bad}`)
}

const str = (value: string) => `"${value}"`

/** The rule a member stands for; none for a member that does not parse (validation refuses those). */
const memberRule = (role: string, member: string, issuers: Issuers): ReadonlyArray<string> => {
  const parsed = parseMember(member)
  const head = `role(${str(role)}) <- `
  if (parsed === undefined) return []
  if (parsed.kind === "authenticated") return [`${head}node($peer)`]
  // Credentials carry the issuer as configured, so the rule names it in that spelling.
  const issuer = parsed.kind === "node" ? undefined : issuerOf(parsed, issuers)
  const scope = issuer === undefined ? "" : `issuer(${str(configured(issuers, issuer) ?? issuer)}), `
  const { kind, pattern } = parsed
  if (pattern.startsWith("*")) return [`${head}${scope}${kind}($v), $v.ends_with(${str(pattern.slice(1))})`]
  if (pattern.endsWith("*")) return [`${head}${scope}${kind}($v), $v.starts_with(${str(pattern.slice(0, -1))})`]
  return [`${head}${scope}${kind}(${str(pattern)})`]
}

/** The policy as Datalog, for components that authorize with it (`GET /policies`). */
export const toDatalog = (doc: Document, issuers: Issuers): ReadonlyArray<string> => [
  ...doc.bindings.flatMap((b) => b.members.flatMap((m) => memberRule(b.role, m, issuers))),
  ...doc.roles.flatMap((r) => [
    ...r.allowedServices.map((s) => `service_allowed(${str(s)}) <- role(${str(r.name)})`),
    ...r.allowedTargets.map((t) => `target_allowed(${str(t)}) <- role(${str(r.name)})`),
    ...r.allowedLabels.map((l) => `label_allowed(${str(l)}) <- role(${str(r.name)})`),
  ]),
]

// --- Serving a service to a peer (the proxy's serving side) ---------------------------------------------------------

/** The service a request asks for: its type, name and the path below the service (`""` or `/...`). */
export interface ServiceRequest {
  readonly type: string
  readonly name: string
  readonly path: string
}

/** The rule that refused a request; it names itself in the 403 answer. */
export type DeniedBy = "no_policy" | "allowed_services" | "allowed_targets"

export type Decision =
  | { readonly _tag: "Allowed"; readonly role: string }
  | { readonly _tag: "Denied"; readonly rule: DeniedBy; readonly reason: string }

/** A path below the pattern's path, segment by segment: `/v1` covers `/v1` and `/v1/models`, not `/v1beta`. */
const coversPath = (prefix: string, path: string): boolean =>
  prefix === "" || prefix === "/" || path === prefix || path.startsWith(prefix.endsWith("/") ? prefix : `${prefix}/`)

/**
 * Whether an `allowed_services` pattern covers the request: `*`, or `type://name[/path]` where name is a name, `*`,
 * `*.suffix` or `prefix.*`. A pattern with a path covers only requests at or below that path, so `mcp://docs/search`
 * (a grant of one tool) does not open the whole `docs` server through the proxy.
 */
export const serviceMatches = (pattern: string, service: ServiceRequest): boolean => {
  if (pattern === "*") return true
  const sep = pattern.indexOf("://")
  if (sep <= 0 || pattern.slice(0, sep) !== service.type) return false
  const rest = pattern.slice(sep + 3)
  const slash = rest.indexOf("/")
  const name = slash === -1 ? rest : rest.slice(0, slash)
  const path = slash === -1 ? "" : rest.slice(slash)
  const nameOk =
    name === "*" ||
    (name.startsWith("*.") ? service.name.endsWith(name.slice(1)) : false) ||
    (name.endsWith(".*") ? service.name.startsWith(name.slice(0, -1)) : false) ||
    name === service.name
  return nameOk && coversPath(path, service.path)
}

/**
 * Whether an `allowed_targets` pattern names the serving peer: `*`, `node:<peer id>`, or `user:`, `email:`, `group:`
 * followed by a value (one leading or trailing `*` allowed) matched against the identity behind the peer, read as
 * binding members are (an unqualified one names the first issuer).
 */
export const targetMatches = (pattern: string, target: Subject, issuers: Issuers): boolean =>
  pattern === "*" || memberMatches(pattern, target, issuers)

/** Every role a caller holds: the one its credential names, and those the policy binds to it or its identity. */
export const callerRoles = (
  doc: Document,
  credentialRole: string,
  who: Subject,
  issuers: Issuers,
): ReadonlySet<string> => new Set([credentialRole, ...rolesOf(doc, who, issuers)])

/**
 * The serving side's decision: allowed when one role of the caller both lists the service in `allowed_services` and
 * names this peer in `allowed_targets`. Without a copy of the policy nothing is allowed. A role absent from the
 * policy, or one with empty lists, grants nothing.
 */
export const authorizeService = (
  doc: Document | undefined,
  roles: ReadonlySet<string>,
  service: ServiceRequest,
  self: Subject,
  issuers: Issuers,
): Decision => {
  const wanted = `${service.type}://${service.name}${service.path}`
  if (doc === undefined) {
    return { _tag: "Denied", rule: "no_policy", reason: "this peer has no copy of the mesh policy yet" }
  }
  const held = doc.roles.filter((r) => roles.has(r.name))
  const serving = held.filter((r) => r.allowedServices.some((p) => serviceMatches(p, service)))
  if (serving.length === 0) {
    return {
      _tag: "Denied",
      rule: "allowed_services",
      reason: `no role of the caller (${[...roles].sort().join(", ")}) lists ${wanted}`,
    }
  }
  const role = serving.find((r) => r.allowedTargets.some((p) => targetMatches(p, self, issuers)))
  if (role === undefined) {
    return {
      _tag: "Denied",
      rule: "allowed_targets",
      reason: `no role of the caller that lists ${wanted} (${serving.map((r) => r.name).join(", ")}) targets this peer`,
    }
  }
  return { _tag: "Allowed", role: role.name }
}

/** A peer as a policy subject: its id, and the OIDC identity behind it when its credential names one. */
export const subjectOf = (
  peerId: string,
  identity?: {
    readonly issuer: string
    readonly subject: string
    readonly email?: string
    readonly groups: ReadonlyArray<string>
  },
): Subject =>
  identity === undefined
    ? { peerId }
    : {
        peerId,
        issuer: identity.issuer,
        subject: identity.subject,
        groups: identity.groups,
        ...(identity.email === undefined ? {} : { email: identity.email }),
      }
