import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Policy from "../../src/domain/Policy.js"

const A = "https://idp.example.com"
const B = "https://weaker.example.org/"
const issuers = [A, B]

describe("policy members", () => {
  it("an unqualified identity member names the first issuer; a qualified one its own", () => {
    const alice = (issuer: string) => ({ issuer, subject: "alice", email: "alice@example.com", groups: ["eng"] })
    expect(Policy.memberMatches("user:alice", alice(A), issuers)).toBe(true)
    expect(Policy.memberMatches("user:alice", alice(B), issuers)).toBe(false)
    expect(Policy.memberMatches("email:*@example.com", alice(B), issuers)).toBe(false)
    // Qualified: the issuer's spelling may differ by a trailing slash.
    expect(Policy.memberMatches("group:https://weaker.example.org|eng", alice(B), issuers)).toBe(true)
    expect(Policy.memberMatches(`group:${B}|eng`, alice(A), issuers)).toBe(false)
    expect(Policy.memberMatches(`user:${A}/|ali*`, alice(A), issuers)).toBe(true)
    // Node members and the authenticated member ignore issuers.
    expect(Policy.memberMatches("node:12D3KooWx", { peerId: "12D3KooWx" }, issuers)).toBe(true)
    expect(Policy.memberMatches(Policy.AUTHENTICATED, alice(B), issuers)).toBe(true)
  })

  it("a subject holding `|` stays unqualified unless a URL precedes it", () => {
    const who = { issuer: A, subject: "auth0|123", groups: [] }
    expect(Policy.memberMatches("user:auth0|123", who, issuers)).toBe(true)
    expect(Policy.memberMatches(`user:${A}|auth0|123`, who, issuers)).toBe(true)
  })

  it("validation refuses an issuer that is not configured; Datalog names the configured spelling", () => {
    const doc = (member: string): Policy.Document => ({
      roles: [{ name: "r", description: "", allowedTargets: [], allowedServices: [], allowedLabels: [] }],
      bindings: [{ role: "r", members: [member] }],
    })
    expect(Policy.validate(doc("user:https://other.example|x"), issuers)).toEqual(
      Either.left(
        'bindings[0].members[0]: member "user:https://other.example|x" names issuer "https://other.example", which is not configured',
      ),
    )
    expect(Policy.validate(doc(`user:${B}|*`), issuers)).toEqual(
      Either.left(`bindings[0].members[0]: member "user:${B}|*" has no value`),
    )
    expect(Policy.toDatalog(doc("user:https://weaker.example.org|bob"), issuers)).toEqual([
      `role("r") <- issuer("${B}"), user("bob")`,
    ])
    expect(Policy.toDatalog(doc("email:*@example.com"), issuers)).toEqual([
      `role("r") <- issuer("${A}"), email($v), $v.ends_with("@example.com")`,
    ])
  })
})

const svc = (type: string, name: string, path = "") => ({ type, name, path })

const role = (name: string, allowedServices: ReadonlyArray<string>, allowedTargets: ReadonlyArray<string>) => ({
  name,
  description: "",
  allowedServices,
  allowedTargets,
  allowedLabels: [],
})

describe("Policy.serviceMatches", () => {
  it("matches *, exact names and one wildcard at either end of the name", () => {
    expect(Policy.serviceMatches("*", svc("a2a", "x"))).toBe(true)
    expect(Policy.serviceMatches("mcp://*", svc("mcp", "weather"))).toBe(true)
    expect(Policy.serviceMatches("mcp://*", svc("inference", "weather"))).toBe(false)
    expect(Policy.serviceMatches("mcp://weather", svc("mcp", "weather"))).toBe(true)
    expect(Policy.serviceMatches("mcp://weather", svc("mcp", "weather2"))).toBe(false)
    expect(Policy.serviceMatches("mcp://*.internal", svc("mcp", "db.internal"))).toBe(true)
    expect(Policy.serviceMatches("mcp://*.internal", svc("mcp", "internal"))).toBe(false)
    expect(Policy.serviceMatches("mcp://team.*", svc("mcp", "team.search"))).toBe(true)
    expect(Policy.serviceMatches("mcp://team.*", svc("mcp", "teamsearch"))).toBe(false)
  })

  it("a pattern with a path covers that path and below it, segment by segment, nothing else", () => {
    expect(Policy.serviceMatches("inference://llm/v1", svc("inference", "llm", "/v1/models"))).toBe(true)
    expect(Policy.serviceMatches("inference://llm/v1", svc("inference", "llm", "/v1"))).toBe(true)
    expect(Policy.serviceMatches("inference://llm/v1", svc("inference", "llm", "/v1beta"))).toBe(false)
    expect(Policy.serviceMatches("inference://llm/v1", svc("inference", "llm", ""))).toBe(false)
    // A grant of one MCP tool does not open the whole server through the proxy.
    expect(Policy.serviceMatches("mcp://docs/search", svc("mcp", "docs", ""))).toBe(false)
  })
})

describe("Policy.authorizeService", () => {
  const self = Policy.subjectOf("12D3Self", { issuer: A, subject: "alice", groups: ["ops"], email: "a@example.com" })
  const doc = (roles: ReadonlyArray<ReturnType<typeof role>>): Policy.Document => ({ roles, bindings: [] })

  it("fails closed without a copy of the policy", () => {
    const decision = Policy.authorizeService(undefined, new Set(["mesh:role:node"]), svc("mcp", "x"), self, issuers)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "no_policy" })
  })

  it("names allowed_services when no role of the caller lists the service", () => {
    const policy = doc([role("mesh:role:node", ["mcp://other"], ["*"]), role("admins", ["*"], ["*"])])
    const decision = Policy.authorizeService(policy, new Set(["mesh:role:node"]), svc("mcp", "x"), self, issuers)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "allowed_services" })
  })

  it("names allowed_targets when the roles listing the service do not name this peer", () => {
    const policy = doc([role("mesh:role:node", ["mcp://x"], ["node:12D3Other"])])
    const decision = Policy.authorizeService(policy, new Set(["mesh:role:node"]), svc("mcp", "x"), self, issuers)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "allowed_targets" })
  })

  it("one role must grant both: a service from one role and a target from another is not enough", () => {
    const policy = doc([role("services", ["mcp://x"], []), role("targets", [], ["*"])])
    const decision = Policy.authorizeService(policy, new Set(["services", "targets"]), svc("mcp", "x"), self, issuers)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "allowed_targets" })
  })

  it("allows through any role of the caller, with targets by node, user, email or group", () => {
    for (const target of ["*", "node:12D3Self", "user:alice", "email:*@example.com", "group:op*"]) {
      const policy = doc([role("mesh:role:node", [], []), role("ops", ["mcp://x"], [target])])
      const decision = Policy.authorizeService(
        policy,
        new Set(["mesh:role:node", "ops"]),
        svc("mcp", "x"),
        self,
        issuers,
      )
      expect([target, decision]).toEqual([target, { _tag: "Allowed", role: "ops" }])
    }
    const policy = doc([role("ops", ["mcp://x"], ["group:dev", "user:bob", "node:12D3Other"])])
    expect(Policy.authorizeService(policy, new Set(["ops"]), svc("mcp", "x"), self, issuers)._tag).toBe("Denied")
  })

  it("a role the policy does not define grants nothing", () => {
    const decision = Policy.authorizeService(doc([]), new Set(["mesh:role:node"]), svc("mcp", "x"), self, issuers)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "allowed_services" })
  })
})

describe("Policy.callerRoles", () => {
  it("is the credential's role plus the roles bound to the peer or its identity", () => {
    const policy: Policy.Document = {
      roles: [],
      bindings: [
        { role: "by-node", members: ["node:12D3Caller"] },
        { role: "by-group", members: ["group:eng*"] },
        { role: "other", members: ["user:bob"] },
      ],
    }
    const who = Policy.subjectOf("12D3Caller", { issuer: A, subject: "alice", groups: ["engineering"] })
    expect([...Policy.callerRoles(policy, "mesh:role:node", who, issuers)].sort()).toEqual([
      "by-group",
      "by-node",
      "mesh:role:node",
    ])
  })
})
