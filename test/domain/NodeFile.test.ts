import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as NodeFile from "../../src/domain/NodeFile.js"

const stdio = (extra: string) => `services:\n  - name: files\n    type: mcp\n    command: [mcp-files]\n${extra}`

describe("mesh-node.yaml", () => {
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
