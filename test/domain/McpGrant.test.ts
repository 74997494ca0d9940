import { describe, expect, it } from "@effect/vitest"
import * as McpGrant from "../../src/domain/McpGrant.js"
import type * as Policy from "../../src/domain/Policy.js"

const role = (name: string, services: ReadonlyArray<string>, targets: ReadonlyArray<string> = ["*"]) => ({
  name,
  description: "",
  allowedServices: services,
  allowedTargets: targets,
  allowedLabels: [],
})
const doc = (roles: ReadonlyArray<Policy.Role>): Policy.Document => ({ roles, bindings: [] })
const self = { peerId: "12D3KooSelf" }
const tools = (...names: ReadonlyArray<string>): McpGrant.Grant => ({ _tag: "Tools", tools: new Set(names) })
const call = (name: unknown) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name } })

describe("grants on MCP services", () => {
  it("a grant is the union of the tools the caller's roles name; a whole-service pattern wins", () => {
    const policy = doc([role("a", ["mcp://docs/search", "mcp://other"]), role("b", ["mcp://docs/fetch"])])
    expect(McpGrant.authorize(policy, new Set(["a", "b"]), "docs", self, [])).toEqual({
      _tag: "Allowed",
      grant: tools("search", "fetch"),
    })
    const whole = doc([role("a", ["mcp://docs/search"]), role("b", ["mcp://docs"])])
    expect(McpGrant.authorize(whole, new Set(["a", "b"]), "docs", self, [])).toEqual({
      _tag: "Allowed",
      grant: McpGrant.SERVICE,
    })
    expect(McpGrant.authorize(doc([role("a", ["*"])]), new Set(["a"]), "docs", self, [])).toMatchObject({
      grant: McpGrant.SERVICE,
    })
  })

  it("no role naming the service, or none targeting this peer, or no policy: denied, naming the rule", () => {
    const policy = doc([role("a", ["mcp://other/search"]), role("b", ["mcp://docs/search"], ["node:someone-else"])])
    expect(McpGrant.authorize(policy, new Set(["a"]), "docs", self, [])).toMatchObject({ rule: "allowed_services" })
    expect(McpGrant.authorize(policy, new Set(["b"]), "docs", self, [])).toMatchObject({ rule: "allowed_targets" })
    expect(McpGrant.authorize(undefined, new Set(["a"]), "docs", self, [])).toMatchObject({ rule: "no_policy" })
    // A tool pattern does not name a service whose name only starts like it.
    expect(McpGrant.authorize(doc([role("a", ["mcp://doc/x"])]), new Set(["a"]), "docs", self, [])).toMatchObject({
      _tag: "Denied",
    })
  })

  it("a tool grant lets set-up, ping, tools/list, notifications and responses through; calls only of its tools", () => {
    const grant = tools("search")
    for (const allowed of [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: {} },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "ping" },
      { jsonrpc: "2.0", id: 3, method: "tools/list" },
      { jsonrpc: "2.0", id: 4, result: {} },
      call("search"),
    ]) {
      expect(McpGrant.refusal(grant, "docs", allowed)).toBeUndefined()
    }
    expect(McpGrant.refusal(grant, "docs", call("delete"))).toContain("mcp://docs/delete")
    expect(McpGrant.refusal(grant, "docs", call(7))).toContain("allowed_services")
    expect(McpGrant.refusal(grant, "docs", { jsonrpc: "2.0", id: 5, method: "resources/read" })).toContain(
      "allowed_services",
    )
    expect(McpGrant.refusal(McpGrant.SERVICE, "docs", call("delete"))).toBeUndefined()
  })

  it("a tool list is cut to the granted tools; other answers and whole grants pass unchanged", () => {
    const list = { jsonrpc: "2.0", id: 3, result: { tools: [{ name: "search" }, { name: "delete" }], nextCursor: "x" } }
    expect(McpGrant.filterAnswer(tools("search"), list)).toEqual({
      ...list,
      result: { tools: [{ name: "search" }], nextCursor: "x" },
    })
    expect(McpGrant.filterAnswer(McpGrant.SERVICE, list)).toBeUndefined()
    expect(McpGrant.filterAnswer(tools("search"), { jsonrpc: "2.0", id: 4, result: { content: [] } })).toBeUndefined()
  })
})
