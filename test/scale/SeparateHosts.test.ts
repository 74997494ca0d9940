/**
 * Separate hosts (issue 24): the control plane and two routers on one network segment, nodes A and B each in a
 * network namespace of its own, on subnets the segment does not forward between. A and B can reach the routers but
 * not each other, so everything between them runs through a router's relay: discovery, a proxied MCP session and a
 * streamed completion routed by A's /v1. Then a direct route is opened and B restarts; A's next connection to B goes
 * direct.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect, Schedule } from "effect"
import OpenAI from "openai"
import * as DemoInference from "../../src/demo/DemoInference.js"
import { demoServers } from "./DemoProcess.js"
import * as Local from "./LocalApi.js"
import * as Namespaces from "./Namespaces.js"
import { poll } from "./Requests.js"
import * as Topology from "./Topology.js"

const why = Namespaces.unavailable()
if (why !== undefined) console.log(`separate-hosts tests skipped: ${why}`)

const pathsTo = (node: Topology.Node, peer: string) =>
  Local.json<{ peer?: { paths?: ReadonlyArray<string> } }>(node, `/debug/connectivity?peer=${peer}`).pipe(
    Effect.map((info) => info.peer?.paths ?? []),
    Effect.orElseSucceed((): ReadonlyArray<string> => []),
  )

/** A's MCP session with B's demo service through A's proxy: the session opens and a tool call answers. */
const mcpThroughProxy = (a: Topology.Node, b: string) =>
  Effect.acquireUseRelease(
    Effect.tryPromise(async () => {
      const client = new Client({ name: "separate-hosts", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${Local.BASE}/mesh/${b}/mcp/demo`), { fetch: Local.fetchFor(a) }),
      )
      return client
    }),
    (client) =>
      Effect.tryPromise(
        () => client.callTool({ name: "word_count", arguments: { text: "one two three" } }) as Promise<CallToolResult>,
      ),
    (client) => Effect.promise(() => client.close().catch(() => undefined)),
  )

/** A streamed completion through A's /v1, which routes the model to B: the chunks as they came. */
const streamedCompletion = (a: Topology.Node) =>
  Effect.promise(async () => {
    const openai = new OpenAI({
      baseURL: `${Local.BASE}/v1`,
      apiKey: "unused",
      fetch: Local.fetchFor(a),
      maxRetries: 0,
    })
    const stream = await openai.chat.completions.create({
      model: DemoInference.MODEL,
      messages: [{ role: "user", content: "say something" }],
      stream: true,
    })
    const chunks: Array<string> = []
    for await (const chunk of stream) chunks.push(chunk.choices[0]?.delta?.content ?? "")
    return chunks
  })

describe.skipIf(why !== undefined)("separate hosts in network namespaces", () => {
  it.scopedLive(
    "nodes that cannot reach each other work through the relay; once a route opens the next connection is direct",
    () =>
      Effect.gen(function* () {
        const folder = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "mesh-separate-hosts-"))),
          (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true })),
        )
        const hosts = yield* Namespaces.make(2)
        const [hostA, hostB] = hosts.nodes
        if (hostA === undefined || hostB === undefined) return yield* Effect.dieMessage("two hosts expected")
        const cp = yield* Topology.controlPlane({
          folder,
          controlPlaneHost: Namespaces.SEGMENT.cp,
          controlPlanePrefix: hosts.segment.prefix,
        })
        yield* Effect.all(
          Namespaces.SEGMENT.routers.map((host, i) =>
            Topology.router(cp, folder, `router-${i + 1}`, { host, prefix: hosts.segment.prefix }),
          ),
          { concurrency: "unbounded" },
        )
        const demo = yield* demoServers(hostB.prefix)
        const a = yield* Topology.node(cp, folder, "a", { prefix: hostA.prefix, listen: `/ip4/${hostA.address}/tcp/0` })
        const b = yield* Topology.node(cp, folder, "b", {
          prefix: hostB.prefix,
          // A fixed port: B comes back at the address A learned over the relayed connection.
          listen: `/ip4/${hostB.address}/tcp/4101`,
          config: [
            "services:",
            `  - { name: demo, type: mcp, target_url: '${demo.mcp}' }`,
            `  - { name: demo, type: inference, target_url: '${demo.inference}' }`,
            "",
          ].join("\n"),
        })
        const [, bId] = yield* Effect.all([Topology.peerIdOf(a), Topology.peerIdOf(b)], { concurrency: "unbounded" })

        yield* poll(Topology.discover(a, "mcp", "demo"), (found) => found.includes(bId), {
          what: "A discovers B through the routers",
          timeout: Duration.seconds(60),
          interval: Duration.millis(500),
        })
        const viaRelay = yield* mcpThroughProxy(a, bId)
        expect(JSON.stringify(viaRelay.content)).toContain("3 words")
        const chunks = yield* streamedCompletion(a)
        expect(chunks.filter((c) => c.length > 0).length).toBeGreaterThan(1)
        const relayed = yield* pathsTo(a, bId)
        expect(relayed.length).toBeGreaterThan(0)
        expect(relayed.every((path) => path === "relayed")).toBe(true)

        // A knows B's own address (identify told it over the relayed connection) but could not reach it. The route
        // opens; B restarts, which ends the relayed connection, and A's next connection to B tries that address first.
        yield* hosts.openDirectRoutes
        yield* b.stop
        yield* b.start
        yield* Topology.peerIdOf(b)
        const direct = yield* mcpThroughProxy(a, bId).pipe(
          Effect.retry(Schedule.spaced("500 millis").pipe(Schedule.upTo("30 seconds"))),
        )
        expect(JSON.stringify(direct.content)).toContain("3 words")
        expect(yield* pathsTo(a, bId)).toContain("direct")
        const again = yield* streamedCompletion(a)
        expect(again.filter((c) => c.length > 0).length).toBeGreaterThan(1)
      }),
    Duration.toMillis(Duration.minutes(5)),
  )
})
