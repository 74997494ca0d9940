import { describe, expect, it } from "@effect/vitest"
import { Either, Option, Redacted } from "effect"
import * as NodeConfig from "../../src/config/NodeConfig.js"
import * as NodeFile from "../../src/domain/NodeFile.js"

const stdio = (extra: string) => `services:\n  - name: files\n    type: mcp\n    command: [mcp-files]\n${extra}`

describe("mesh-node.yaml", () => {
  it("agents: each with an id, a scope, a ttl of at least a minute (24h by default) and a token file", () => {
    const parsed = NodeFile.parse(
      "agents:\n  - id: ide\n    tools: [mcp://demo/word_count]\n    token_file: agents/ide.token\n",
    )
    expect(Either.map(parsed, (file) => file.agents)).toEqual(
      Either.right([
        {
          id: "ide",
          services: [],
          tools: ["mcp://demo/word_count"],
          models: [],
          methods: [],
          paths: [],
          labels: {},
          ttl: "24h",
          token_file: "agents/ide.token",
        },
      ]),
    )
    const agent = (extra: string) => `agents:\n  - id: ide\n    token_file: t\n${extra}`
    expect(NodeFile.parse(agent("    ttl: 10s\n"))).toEqual(Either.left("agents[0].ttl: must be at least 1m"))
    expect(Either.isLeft(NodeFile.parse(agent("    scope: all\n")))).toBe(true)
    expect(Either.isLeft(NodeFile.parse("agents:\n  - id: IDE\n    token_file: t\n"))).toBe(true)
    expect(NodeFile.parse(`${agent("")}  - id: ide\n    token_file: u\n`)).toEqual(
      Either.left("agents[1].id: duplicate agent ide"),
    )
  })

  it("a command service may say how many processes it runs at once, from 1 to 256", () => {
    const parsed = NodeFile.parse(stdio("    max_processes: 2\n    env:\n      TOKEN: abc\n"))
    expect(Either.map(parsed, (file) => file.services[0])).toEqual(
      Either.right({
        name: "files",
        type: "mcp",
        description: "",
        command: ["mcp-files"],
        env: { TOKEN: "abc" },
        max_processes: 2,
      }),
    )
    expect(Either.map(NodeFile.parse(stdio("")), (file) => file.services[0]?.max_processes)).toEqual(
      Either.right(undefined),
    )
    for (const bad of ["0", "257", "1.5", "many"]) {
      expect(NodeFile.parse(stdio(`    max_processes: ${bad}\n`)), bad).toEqual(
        Either.left("services[0].max_processes: must be a whole number from 1 to 256"),
      )
    }
  })

  it("max_processes and env belong to services that run a command", () => {
    const http = "services:\n  - name: files\n    type: mcp\n    target_url: http://127.0.0.1:1/mcp\n"
    expect(NodeFile.parse(`${http}    max_processes: 2\n`)).toEqual(
      Either.left("services[0].max_processes: applies only to a service that runs a command"),
    )
    expect(NodeFile.parse(`${http}    env:\n      A: b\n`)).toEqual(
      Either.left("services[0].env: applies only to a service that runs a command"),
    )
  })
  it("a service type outside mcp, inference and a2a is named with the types allowed", () => {
    expect(NodeFile.parse("services:\n  - name: files\n    type: ftp\n    target_url: http://127.0.0.1:1\n")).toEqual(
      Either.left("services[0].type: must be one of mcp, inference, a2a"),
    )
  })
})

describe("max_response_bytes", () => {
  it("caps a peer's responses: the flag, else the file, else 16 MiB; under 64 KiB is refused", () => {
    const parsed = NodeFile.parse("max_response_bytes: 1048576\n")
    expect(Either.map(parsed, (file) => file.max_response_bytes)).toEqual(Either.right(1048576))
    for (const bad of ["1000", "100000.5", "lots"]) {
      expect(NodeFile.parse(`max_response_bytes: ${bad}\n`), bad).toEqual(
        Either.left("max_response_bytes: must be a whole number of bytes, at least 65536"),
      )
    }
    const base = { dataDir: "/nowhere", apiToken: Redacted.make("t") }
    expect(NodeConfig.maxResponseBytes(NodeConfig.make(base))).toBe(16 * 1024 * 1024)
    const fromFile = NodeConfig.make({ ...base, file: { ...NodeFile.empty, max_response_bytes: 1048576 } })
    expect(NodeConfig.maxResponseBytes(fromFile)).toBe(1048576)
    expect(NodeConfig.maxResponseBytes({ ...fromFile, maxResponseBytes: Option.some(70000) })).toBe(70000)
  })
})
