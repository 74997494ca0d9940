/**
 * What the node keeps of the tools a peer's MCP server lists (`tools/list`), before they reach an agent or a search
 * row: they are the peer's words, and a hostile peer could list megabytes of them. A tool with a name an agent could
 * not call back, or a schema past its cap, is left out (a schema cut short would be a different schema); a long
 * title or description is shortened. Hidden characters are removed from every string of the definition (HiddenText):
 * an agent sees only what a person reviewing the tool would see.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import * as HiddenText from "./HiddenText.js"
import * as ToolFingerprint from "./ToolFingerprint.js"
import { validTool } from "./ToolName.js"

export const MAX_TITLE = 256
export const MAX_DESCRIPTION = 4096
/** An input or output schema, as JSON text. */
export const MAX_SCHEMA_BYTES = 64 * 1024

const schemaFits = (schema: unknown): boolean =>
  schema === undefined || Buffer.byteLength(JSON.stringify(schema) ?? "", "utf8") <= MAX_SCHEMA_BYTES

/** The tool within the caps, with only the fields the node passes on; none when it cannot be kept. */
export const bound = (tool: Tool): Tool | undefined => {
  if (typeof tool.name !== "string" || !validTool(tool.name)) return undefined
  if (!schemaFits(tool.inputSchema) || !schemaFits(tool.outputSchema)) return undefined
  return {
    name: tool.name,
    ...(typeof tool.title === "string" ? { title: HiddenText.clean(tool.title).slice(0, MAX_TITLE) } : {}),
    ...(typeof tool.description === "string"
      ? { description: HiddenText.clean(tool.description).slice(0, MAX_DESCRIPTION) }
      : {}),
    inputSchema: HiddenText.cleanJson(tool.inputSchema) as Tool["inputSchema"],
    ...(tool.outputSchema === undefined
      ? {}
      : { outputSchema: HiddenText.cleanJson(tool.outputSchema) as NonNullable<Tool["outputSchema"]> }),
  }
}

/**
 * A peer's tool as the node keeps it: the bounded, cleaned form agents see, and the definition as the provider sent
 * it (the fields a fingerprint covers, hidden characters included), which tool pinning judges.
 */
export interface Listed {
  readonly tool: Tool
  readonly definition: Readonly<Record<string, unknown>>
}

/** The tool kept (bound) with its definition as sent; none when it cannot be kept. */
export const listed = (tool: Tool): Listed | undefined => {
  const kept = bound(tool)
  return kept === undefined ? undefined : { tool: kept, definition: ToolFingerprint.definitionOf(tool) }
}
