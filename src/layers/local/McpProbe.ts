/**
 * The probe of an MCP server over HTTP: initialized and asked for its tools through the MCP SDK client, so any server
 * the SDK speaks to counts. Apart from `Probes` so that the SDK is loaded only by a node with such a service.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Duration, Effect } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import * as ToolPages from "../mcp/ToolPages.js"
import * as Unchecked from "../mcp/Unchecked.js"

/** Leaving a session politely (DELETE) must not hold up the next probe. */
const CLOSE_TIMEOUT = Duration.seconds(1)

/**
 * The names of the server's tools, listed page by page until `limit` (ToolPages); none when it answers 401 or 403 (up, but it
 * wants its callers' credential). Fails with what the client threw.
 */
export const toolNames = (url: string, limit: number): Effect.Effect<ReadonlyArray<string>, unknown> =>
  Effect.acquireUseRelease(
    Effect.sync(() => ({
      client: new Client({ name: "mesh-node-probe", version: pkg.version }, { jsonSchemaValidator: Unchecked.schemas }),
      transport: new StreamableHTTPClientTransport(new URL(url)),
    })),
    ({ client, transport }) =>
      Effect.tryPromise({
        try: async (signal) => {
          try {
            await client.connect(transport, { signal })
          } catch (error) {
            if (error instanceof StreamableHTTPError && (error.code === 401 || error.code === 403)) return []
            throw error
          }
          return await ToolPages.list(client, signal, (tool) => tool.name, limit)
        },
        catch: (error) => error,
      }),
    ({ client, transport }) =>
      Effect.tryPromise(() => transport.terminateSession()).pipe(
        Effect.timeout(CLOSE_TIMEOUT),
        Effect.ignore,
        Effect.zipRight(Effect.tryPromise(() => client.close()).pipe(Effect.ignore)),
      ),
  )
