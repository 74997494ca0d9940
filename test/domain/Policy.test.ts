import { describe, expect, it } from "@effect/vitest"
import * as Policy from "../../src/domain/Policy.js"

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
  const self = Policy.subjectOf("12D3Self", { subject: "alice", groups: ["ops"], email: "a@example.com" })
  const doc = (roles: ReadonlyArray<ReturnType<typeof role>>): Policy.Document => ({ roles, bindings: [] })

  it("fails closed without a copy of the policy", () => {
    const decision = Policy.authorizeService(undefined, new Set(["mesh:role:node"]), svc("mcp", "x"), self)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "no_policy" })
  })

  it("names allowed_services when no role of the caller lists the service", () => {
    const policy = doc([role("mesh:role:node", ["mcp://other"], ["*"]), role("admins", ["*"], ["*"])])
    const decision = Policy.authorizeService(policy, new Set(["mesh:role:node"]), svc("mcp", "x"), self)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "allowed_services" })
  })

  it("names allowed_targets when the roles listing the service do not name this peer", () => {
    const policy = doc([role("mesh:role:node", ["mcp://x"], ["node:12D3Other"])])
    const decision = Policy.authorizeService(policy, new Set(["mesh:role:node"]), svc("mcp", "x"), self)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "allowed_targets" })
  })

  it("one role must grant both: a service from one role and a target from another is not enough", () => {
    const policy = doc([role("services", ["mcp://x"], []), role("targets", [], ["*"])])
    const decision = Policy.authorizeService(policy, new Set(["services", "targets"]), svc("mcp", "x"), self)
    expect(decision).toMatchObject({ _tag: "Denied", rule: "allowed_targets" })
  })

  it("allows through any role of the caller, with targets by node, user, email or group", () => {
    for (const target of ["*", "node:12D3Self", "user:alice", "email:*@example.com", "group:op*"]) {
      const policy = doc([role("mesh:role:node", [], []), role("ops", ["mcp://x"], [target])])
      const decision = Policy.authorizeService(policy, new Set(["mesh:role:node", "ops"]), svc("mcp", "x"), self)
      expect([target, decision]).toEqual([target, { _tag: "Allowed", role: "ops" }])
    }
    const policy = doc([role("ops", ["mcp://x"], ["group:dev", "user:bob", "node:12D3Other"])])
    expect(Policy.authorizeService(policy, new Set(["ops"]), svc("mcp", "x"), self)._tag).toBe("Denied")
  })

  it("a role the policy does not define grants nothing", () => {
    const decision = Policy.authorizeService(doc([]), new Set(["mesh:role:node"]), svc("mcp", "x"), self)
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
    const who = Policy.subjectOf("12D3Caller", { subject: "alice", groups: ["engineering"] })
    expect([...Policy.callerRoles(policy, "mesh:role:node", who)].sort()).toEqual([
      "by-group",
      "by-node",
      "mesh:role:node",
    ])
  })
})
