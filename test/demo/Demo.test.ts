/**
 * mesh-one's demo services on their own, with the clients an agent uses: the stock MCP SDK client against the demo
 * tools, the `openai` package against the demo provider (whole, streamed with usage, legacy completions, errors).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Exit, Scope } from "effect"
import OpenAI, { NotFoundError } from "openai"
import * as DemoInference from "../../src/demo/DemoInference.js"
import * as DemoMcpServer from "../../src/demo/DemoMcpServer.js"

let scope: Scope.CloseableScope
let mcpUrl = ""
let openai: OpenAI

beforeAll(async () => {
  scope = await Effect.runPromise(Scope.make())
  mcpUrl = await Effect.runPromise(Scope.extend(DemoMcpServer.make(0), scope))
  const root = await Effect.runPromise(Scope.extend(DemoInference.make(0), scope))
  openai = new OpenAI({ baseURL: `${root}/v1`, apiKey: "unused", maxRetries: 0 })
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

describe("demo MCP server", () => {
  it("lists word_count and sha256 and answers them with text and structured content", async () => {
    const client = new Client({ name: "demo-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)))
    try {
      const tools = await client.listTools()
      expect(tools.tools.map((t) => t.name).sort()).toEqual(["sha256", "word_count"])
      const count = (await client.callTool({
        name: "word_count",
        arguments: { text: "one two\nthree" },
      })) as CallToolResult
      expect(count.content).toEqual([{ type: "text", text: "3 words, 2 lines, 13 characters" }])
      expect(count.structuredContent).toEqual({ words: 3, lines: 2, characters: 13 })
      const hash = (await client.callTool({ name: "sha256", arguments: { text: "" } })) as CallToolResult
      expect(hash.structuredContent).toEqual({
        sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      })
    } finally {
      await client.close()
    }
  })
})

describe("demo inference provider", () => {
  const messages = [
    { role: "system" as const, content: "be brief" },
    { role: "user" as const, content: "  ping  " },
  ]

  it("lists its one model and answers a chat completion whole, the same every time", async () => {
    expect((await openai.models.list()).data.map((m) => m.id)).toEqual([DemoInference.MODEL])
    const first = await openai.chat.completions.create({ model: DemoInference.MODEL, messages })
    const again = await openai.chat.completions.create({ model: DemoInference.MODEL, messages })
    expect(first.choices[0]?.message.content).toBe("Hello from the mesh! You said: ping")
    expect(again).toEqual(first)
    expect(first.usage).toEqual({ prompt_tokens: 1, completion_tokens: 7, total_tokens: 8 })
  })

  it("streams a chat completion word by word, then the usage when asked for it", async () => {
    const stream = await openai.chat.completions.create({
      model: DemoInference.MODEL,
      messages,
      stream: true,
      stream_options: { include_usage: true },
    })
    const pieces: Array<string> = []
    let finish: string | null | undefined
    let usage: unknown
    for await (const chunk of stream) {
      const choice = chunk.choices[0]
      if (choice?.delta.content !== undefined && choice.delta.content !== null) pieces.push(choice.delta.content)
      if (choice?.finish_reason) finish = choice.finish_reason
      if (chunk.usage) usage = chunk.usage
    }
    expect(pieces).toHaveLength(7)
    expect(pieces.join("")).toBe("Hello from the mesh! You said: ping")
    expect(finish).toBe("stop")
    expect(usage).toEqual({ prompt_tokens: 1, completion_tokens: 7, total_tokens: 8 })
  })

  it("answers legacy completions, and an unknown model with OpenAI's 404", async () => {
    const completion = await openai.completions.create({ model: DemoInference.MODEL, prompt: "pong" })
    expect(completion.choices[0]?.text).toBe("Hello from the mesh! You said: pong")
    const missing = await openai.chat.completions.create({ model: "gpt-4o", messages }).catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(NotFoundError)
    expect((missing as NotFoundError).code).toBe("model_not_found")
  })
})
