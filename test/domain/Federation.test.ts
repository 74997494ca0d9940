import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Federation from "../../src/domain/Federation.js"
import * as NodeFile from "../../src/domain/NodeFile.js"

const VALID = /^[A-Za-z0-9_.-]{1,128}$/

describe("federated tool names", () => {
  it("are <service>__<tool> when that is a valid, unambiguous MCP tool name", () => {
    const names = Federation.names([
      { service: "demo", tool: "word_count" },
      { service: "docs.v2", tool: "search-all" },
    ])
    expect(Federation.nameOf(names, "demo", "word_count")).toBe("demo__word_count")
    expect(Federation.nameOf(names, "docs.v2", "search-all")).toBe("docs.v2__search-all")
  })

  it("replace other characters and add a hash of service and tool, so two tools never share a name", () => {
    const names = Federation.names([
      { service: "demo", tool: "say hello" },
      { service: "demo", tool: "say/hello" },
      { service: "demo", tool: "say_hello" },
    ])
    const spaced = Federation.nameOf(names, "demo", "say hello") ?? ""
    const slashed = Federation.nameOf(names, "demo", "say/hello") ?? ""
    expect(spaced).toMatch(/^demo__say_hello_[0-9a-f]{8}$/)
    expect(slashed).toMatch(/^demo__say_hello_[0-9a-f]{8}$/)
    expect(spaced).not.toBe(slashed)
    // The exact one keeps its plain name: the others were changed, so they carry the hash.
    expect(Federation.nameOf(names, "demo", "say_hello")).toBe("demo__say_hello")
  })

  it("hash both sides of a clash between different services, and stay within 128 characters", () => {
    const names = Federation.names([
      { service: "a__b", tool: "c" },
      { service: "a", tool: "b__c" },
      { service: "long", tool: "x".repeat(300) },
    ])
    const first = Federation.nameOf(names, "a__b", "c") ?? ""
    const second = Federation.nameOf(names, "a", "b__c") ?? ""
    expect(first).not.toBe(second)
    expect(first.startsWith("a__b__c_")).toBe(true)
    const long = Federation.nameOf(names, "long", "x".repeat(300)) ?? ""
    expect(long).toHaveLength(128)
    for (const name of [first, second, long]) expect(name).toMatch(VALID)
    // Stable: the same pairs give the same names.
    expect(Federation.names([{ service: "long", tool: "x".repeat(300) }]).get(`long/${"x".repeat(300)}`)).toBe(long)
  })

  it("list the tool as coming from its service and peer, the peer's description capped, its schema unchanged", () => {
    const schema = { type: "object" as const, properties: { q: { type: "string" } }, required: ["q"] }
    const listed = Federation.definition("docs__search", "docs", "12D3KooPeer", {
      name: "search",
      description: "y".repeat(5000),
      inputSchema: schema,
    })
    expect(listed.name).toBe("docs__search")
    expect(listed.description?.startsWith("[mesh: docs on peer 12D3KooPeer] yyy")).toBe(true)
    expect(listed.description).toHaveLength("[mesh: docs on peer 12D3KooPeer] ".length + Federation.MAX_DESCRIPTION)
    expect(listed.inputSchema).toBe(schema)
  })
})

describe("federate: in mesh-node.yaml", () => {
  it("takes mcp://<service> and mcp://<service>/<tool>, with an optional peer selector by labels", () => {
    const file = NodeFile.parse(
      "federate:\n  - mcp://demo\n  - tools: mcp://docs/search\n    peer_labels: { region: eu }\n",
    )
    expect(Either.isRight(file)).toBe(true)
    const rules = Either.isRight(file) ? Federation.rulesOf(file.right) : []
    expect(rules).toEqual([
      { service: "demo", labels: {} },
      { service: "docs", tool: "search", labels: { region: "eu" } },
    ])
    expect(Federation.wanted(rules, "demo", "anything", {})).toBe(true)
    expect(Federation.wanted(rules, "docs", "search", { region: "eu", team: "x" })).toBe(true)
    expect(Federation.wanted(rules, "docs", "search", { region: "us" })).toBe(false)
    expect(Federation.wanted(rules, "docs", "index", { region: "eu" })).toBe(false)
  })

  it("refuses other patterns, naming the key", () => {
    for (const bad of ["demo", "https://demo", "mcp://", "mcp://demo/", "mcp://bad name"]) {
      const parsed = NodeFile.parse(`federate:\n  - ${JSON.stringify(bad)}\n`)
      expect(Either.isLeft(parsed), bad).toBe(true)
      expect(Either.isLeft(parsed) ? parsed.left : "", bad).toContain("federate[0]")
    }
  })
})
