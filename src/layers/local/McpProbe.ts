/**
 * The probe of an MCP server over HTTP, through the MCP SDK v2 client negotiating the era as the spec says (`'auto'`:
 * a modern `server/discover` first, the 2025 `initialize` only on the answers that name a legacy server), then asked
 * for its tools. So a modern-only server (2026-07-28) is published as well as a 2025-era one. Apart from `Probes` so
 * that the SDK is loaded only by a node with such a service.
 */
import { Client, SdkHttpError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Duration, Effect } from "effect"
import pkg from "../../../package.json" with { type: "json" }
import * as ToolPages from "../mcp/ToolPages.js"

/** Leaving a session politely (DELETE) must not hold up the next probe. */
const CLOSE_TIMEOUT = Duration.seconds(1)

/** No output schema is compiled: the probe reads tool names only. */
const unchecked = { getValidator: () => (input: unknown) => ({ valid: true, data: input, errorMessage: undefined }) }

const wantsCredential = (error: unknown) =>
  error instanceof SdkHttpError && (error.status === 401 || error.status === 403)

/**
 * The names of the server's tools, listed page by page until `limit` (ToolPages); none when it answers 401 or 403 (up, but it
 * wants its callers' credential). Fails with what the client threw.
 */
export const toolNames = (url: string, limit: number): Effect.Effect<ReadonlyArray<string>, unknown> =>
  Effect.acquireUseRelease(
    Effect.sync(() => ({
      client: new Client(
        { name: "mesh-node-probe", version: pkg.version },
        { versionNegotiation: { mode: "auto" }, jsonSchemaValidator: unchecked as never },
      ),
      transport: new StreamableHTTPClientTransport(new URL(url)),
    })),
    ({ client, transport }) =>
      Effect.tryPromise({
        try: async (signal) => {
          try {
            await client.connect(transport, { signal })
          } catch (error) {
            if (wantsCredential(error)) return []
            throw error
          }
          return await ToolPages.list(
            {
              listTools: (params, options) => client.listTools(params, { signal: options.signal, cacheMode: "bypass" }),
            },
            signal,
            (tool) => tool.name,
            limit,
          )
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
