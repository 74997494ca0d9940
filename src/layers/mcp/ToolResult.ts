/**
 * What a tool call answers, success or refusal. Apart from `Tool` (zod, the SDK's schema conversion) for what only
 * answers calls, as the federation does, so that it loads no schema machinery.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"

/** A successful result: structured content and its JSON text. */
export const ok = (structured: Record<string, unknown>): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(structured, null, 2) }],
  structuredContent: structured,
})

/** A failure the agent should read (a refusal, an unreachable peer): `isError`, never a transport error. */
export const refused = (message: string): CallToolResult => ({
  content: [{ type: "text", text: message }],
  isError: true,
})
