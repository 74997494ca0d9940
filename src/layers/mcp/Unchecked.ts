/**
 * The node's MCP clients check no tool's output schema: a peer's result is passed on as the server sent it (the
 * agent's own client checks it against the schema it was shown), and a probe only reads tool names. The SDK's
 * default builds an Ajv instance for every client and compiles every listed tool's output schema, a few
 * milliseconds each on a session's first request and on every probe, for checks nobody reads.
 */
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js"

export const schemas: jsonSchemaValidator = {
  getValidator: () => (input) => ({ valid: true, data: input as never, errorMessage: undefined }),
}
