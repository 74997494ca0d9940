import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as AgentScope from "../../src/domain/AgentScope.js"

const scope = (over: Partial<AgentScope.Scope> = {}): AgentScope.Scope => ({
  agent: "ide",
  services: [],
  tools: [],
  models: [],
  methods: [],
  paths: [],
  labels: {},
  expiresAtMs: 0,
  ...over,
})

describe("AgentScope", () => {
  it("a tool pattern grants that tool of the service, nothing else", () => {
    const s = scope({ tools: ["mcp://demo/word_count"] })
    expect(AgentScope.toolAllowed(s, "demo", "word_count")._tag).toBe("Allowed")
    const denied = AgentScope.toolAllowed(s, "demo", "sha256")
    expect(denied).toMatchObject({ _tag: "Denied", rule: "scope.tools" })
    expect(denied._tag === "Denied" && denied.reason).toContain("mcp://demo/sha256")
    expect(AgentScope.mcpGrant(s, "demo")).toEqual({ _tag: "Tools", tools: new Set(["word_count"]) })
    expect(AgentScope.mcpGrant(s, "other")).toBeUndefined()
  })

  it("a service pattern or mcp://svc/* grants the whole MCP service", () => {
    expect(AgentScope.mcpGrant(scope({ services: ["mcp://demo"] }), "demo")).toEqual({ _tag: "Service" })
    expect(AgentScope.mcpGrant(scope({ tools: ["mcp://demo/*"] }), "demo")).toEqual({ _tag: "Service" })
  })

  it("services: the MCP service by its tools, others by a service pattern; then methods and paths", () => {
    const s = scope({ services: ["a2a://docs"], tools: ["mcp://demo/word_count"], methods: ["GET"], paths: ["/api/*"] })
    const call = { type: "a2a" as const, name: "docs", method: "GET", path: "/api/x" }
    expect(AgentScope.serviceAllowed(s, call)._tag).toBe("Allowed")
    expect(AgentScope.serviceAllowed(s, { ...call, name: "wiki" })).toMatchObject({ rule: "scope.services" })
    expect(AgentScope.serviceAllowed(s, { ...call, method: "DELETE" })).toMatchObject({ rule: "scope.methods" })
    expect(AgentScope.serviceAllowed(s, { ...call, path: "/admin" })).toMatchObject({ rule: "scope.paths" })
    expect(
      AgentScope.serviceAllowed(scope({ tools: ["mcp://demo/x"] }), { ...call, type: "mcp", name: "demo", path: "" })
        ._tag,
    ).toBe("Allowed")
  })

  it("models by id or trailing *, labels all required", () => {
    const s = scope({ models: ["mesh-*", "gpt-4o"], labels: { zone: "eu" } })
    expect(AgentScope.modelAllowed(s, "mesh-demo")._tag).toBe("Allowed")
    expect(AgentScope.modelAllowed(s, "gpt-4o-mini")).toMatchObject({ rule: "scope.models" })
    expect(AgentScope.labelsAllowed(s, { zone: "eu", x: "y" })._tag).toBe("Allowed")
    expect(AgentScope.labelsAllowed(s, { zone: "us" })).toMatchObject({ rule: "scope.labels" })
  })

  it("a request refuses ids and patterns a token cannot carry", () => {
    const decode = Schema.decodeUnknownEither(AgentScope.Request)
    expect(Either.isRight(decode({ agent: "ide-1" }))).toBe(true)
    expect(Either.isLeft(decode({ agent: "IDE" }))).toBe(true)
    expect(Either.isLeft(decode({ agent: "ide", tools: ['mcp://a/"b'] }))).toBe(true)
    expect(Either.isLeft(decode({ agent: "ide", tools: ["mcp://a/b c"] }))).toBe(true)
    expect(Either.isLeft(AgentScope.check(Either.getOrThrow(decode({ agent: "ide", tools: ["demo/x"] }))))).toBe(true)
  })
})
