/**
 * The agent-facing half of multi round-trip requests on the node's `/mcp` (issue 50, item 4): a `call_remote_tool`
 * whose remote tool answered `input_required` (as InputRequiredView presents it) reaches a 2026-07-28 agent as an
 * `input_required` result with the node's own sealed `requestState`, and a 2025-era agent as an
 * `elicitation/create` request in its session; either way the answer comes back to the tool on the retry with the
 * state it gave. The gateway (McpGatewayLive.make) serves a stand-in `call_remote_tool` here, on loopback HTTP, to
 * stock clients of both SDKs; the remote half is PeerMcp's and is tested with it.
 */
import { createServer, type Server as HttpServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as V1Transport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Layer, Option, Ref, Runtime, Stream } from "effect"
import { z } from "zod"
import * as InputRequired from "../../../src/domain/InputRequired.js"
import * as InputRequiredView from "../../../src/layers/mcp/InputRequiredView.js"
import * as McpGatewayLive from "../../../src/layers/mcp/McpGatewayLive.js"
import * as Tool from "../../../src/layers/mcp/Tool.js"
import { Federation } from "../../../src/services/federation/Federation.js"

const NoFederation = Layer.succeed(
  Federation,
  Federation.of({
    list: () => Effect.succeed([]),
    lookup: () => Effect.succeed(Option.none()),
    call: () => Effect.succeed(Tool.refused("none")),
    changes: Stream.never,
  }),
)

const ANSWER = { action: "accept" as const, content: { sure: true } }
const TARGET = { peerId: "12D3KooWPeer", toolName: "mcp://asker/confirm" }
const ASK = {
  resultType: "input_required" as const,
  inputRequests: {
    sure: {
      method: "elicitation/create",
      params: {
        mode: "form",
        message: "Delete x?",
        requestedSchema: { type: "object", properties: { sure: { type: "boolean" } }, required: ["sure"] },
      },
    },
  },
  requestState: "server-state",
}

/**
 * call_remote_tool as it behaves against a tool that asks `rounds` times: input_required (InputRequiredView) until
 * then, then what it was told and the server's state it got back. Every call it gets is recorded.
 */
const standIn = (seen: Ref.Ref<ReadonlyArray<Record<string, unknown>>>, rounds: number) =>
  Tool.make({
    name: "call_remote_tool",
    title: "stand-in",
    description: "call_remote_tool against a tool that asks first",
    input: {
      peer_id: z.string(),
      tool_name: z.string(),
      arguments: z.record(z.string(), z.unknown()).optional(),
      input_responses: z.record(z.string(), z.unknown()).optional(),
      request_state: z.string().optional(),
    },
    output: {},
    run: (args) =>
      Effect.gen(function* () {
        const calls = yield* Ref.updateAndGet(seen, (all) => [...all, args])
        const state = args.request_state === undefined ? undefined : InputRequired.unwrapState(args.request_state)
        if (calls.length <= rounds) return InputRequiredView.present(ASK, TARGET, (state?.round ?? 0) + 1)
        return {
          content: [{ type: "text", text: `confirmed: ${JSON.stringify(args.input_responses)} with ${state?.state}` }],
        }
      }),
  })

/** The gateway with the stand-in on a loopback HTTP server; its URL. */
const gateway = (rounds: number) =>
  Effect.gen(function* () {
    const seen = yield* Ref.make<ReadonlyArray<Record<string, unknown>>>([])
    const service = yield* McpGatewayLive.make([standIn(seen, rounds)]).pipe(Effect.provide(NoFederation))
    const runtime = yield* Effect.runtime<never>()
    const server = yield* Effect.acquireRelease(
      Effect.async<HttpServer>((resume) => {
        const http = createServer((req, res) => {
          Runtime.runFork(runtime)(service.handle(req, res))
        })
        http.listen(0, "127.0.0.1", () => resume(Effect.succeed(http)))
      }),
      (http) =>
        Effect.async<void>((resume) => {
          http.closeAllConnections()
          http.close(() => resume(Effect.void))
        }),
    )
    return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), seen }
  })

const modernAgent = (url: URL, elicitation: boolean) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client(
        { name: "agent", version: "1" },
        {
          capabilities: elicitation ? { elicitation: {} } : {},
          versionNegotiation: { mode: { pin: "2026-07-28" } },
        },
      )
      if (elicitation) client.setRequestHandler("elicitation/create", () => ANSWER)
      await client.connect(new StreamableHTTPClientTransport(url))
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

const legacyAgent = (url: URL, elicitation: boolean) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new V1Client(
        { name: "agent", version: "1" },
        { capabilities: elicitation ? { elicitation: {} } : {} },
      )
      if (elicitation) client.setRequestHandler(ElicitRequestSchema, () => ANSWER)
      await client.connect(new V1Transport(url))
      return client
    }),
    (client) => Effect.promise(() => client.close()),
  )

const CALL = { name: "call_remote_tool", arguments: { peer_id: TARGET.peerId, tool_name: TARGET.toolName } }
const EXPECTED = `confirmed: ${JSON.stringify({ sure: ANSWER })} with server-state`

const textOf = (result: unknown) =>
  ((result as { content?: ReadonlyArray<{ type: string; text?: string }> }).content ?? [])
    .map((c) => c.text ?? "")
    .join("")

describe("input_required through the node's /mcp", () => {
  it.scoped("a modern agent gets input_required, answers, and the tool gets the answer and its own state back", () =>
    Effect.gen(function* () {
      const { url, seen } = yield* gateway(1)
      const agent = yield* modernAgent(url, true)
      const result = yield* Effect.promise(() => agent.callTool(CALL))
      expect(textOf(result)).toBe(EXPECTED)
      const calls = yield* Ref.get(seen)
      expect(calls).toHaveLength(2)
      expect(calls[1]?.input_responses).toEqual({ sure: ANSWER })
    }),
  )

  it.scoped("the node's requestState is sealed: altered, it is refused before the tool runs again", () =>
    Effect.gen(function* () {
      const { url, seen } = yield* gateway(1)
      const agent = yield* modernAgent(url, true)
      const asked = (yield* Effect.promise(() =>
        agent.callTool(CALL, { allowInputRequired: true } as never),
      )) as unknown as { resultType: string; requestState: string; inputRequests: Record<string, unknown> }
      expect(asked.resultType).toBe("input_required")
      expect(Object.keys(asked.inputRequests)).toEqual(["sure"])
      // Not the server's state nor call_remote_tool's: the node's own.
      expect(asked.requestState).not.toContain("server-state")
      const tampered = `${asked.requestState.slice(0, -2)}AA`
      const refused = yield* Effect.promise(() =>
        agent.callTool({ ...CALL, inputResponses: { sure: ANSWER }, requestState: tampered } as never).then(
          () => "answered",
          (error: { code?: number }) => error.code,
        ),
      )
      expect(refused).toBe(-32602)
      expect(yield* Ref.get(seen)).toHaveLength(1)
    }),
  )

  it.scoped("a 2025-era agent is asked with elicitation/create in its session, and the tool gets the answer", () =>
    Effect.gen(function* () {
      const { url, seen } = yield* gateway(2)
      const agent = yield* legacyAgent(url, true)
      const result = yield* Effect.promise(() => agent.callTool(CALL))
      expect(textOf(result)).toBe(EXPECTED)
      expect(yield* Ref.get(seen)).toHaveLength(3)
    }),
  )

  it.scoped(
    "a 2025-era agent that cannot answer gets the requests to answer itself; a tool that never stops asking is cut off",
    () =>
      Effect.gen(function* () {
        const mute = yield* gateway(1)
        const cannot = (yield* Effect.promise(() =>
          Effect.runPromise(
            Effect.scoped(Effect.flatMap(legacyAgent(mute.url, false), (a) => Effect.promise(() => a.callTool(CALL)))),
          ),
        )) as { isError?: boolean; structuredContent?: { resultType?: string; inputRequests?: object } }
        // It declared no elicitation: nothing is sent to it in its session, and it gets what call_remote_tool shows.
        expect(cannot.isError).not.toBe(true)
        expect(cannot.structuredContent?.resultType).toBe("input_required")
        expect(JSON.stringify(cannot.structuredContent?.inputRequests)).toContain("elicitation/create")
        expect(textOf(cannot)).toContain("request_state")
        expect(yield* Ref.get(mute.seen)).toHaveLength(1)

        const endless = yield* gateway(1000)
        const agent = yield* legacyAgent(endless.url, true)
        const cut = (yield* Effect.promise(() => agent.callTool(CALL))) as { isError?: boolean }
        expect(cut.isError).toBe(true)
        expect(textOf(cut)).toContain(`more than ${InputRequired.MAX_ROUNDS} times`)
        expect(yield* Ref.get(endless.seen)).toHaveLength(InputRequired.MAX_ROUNDS + 1)
      }),
  )
})
