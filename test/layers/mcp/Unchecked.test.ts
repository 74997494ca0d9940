/**
 * The node's MCP clients compile no output schema: a service with one tool whose output schema a validator cannot
 * compile is still listed whole, where the SDK's default validator fails the listing.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { describe, expect, it } from "vitest"
import * as ToolPages from "../../../src/layers/mcp/ToolPages.js"
import * as Unchecked from "../../../src/layers/mcp/Unchecked.js"

const serving = async (client: Client) => {
  const server = new Server({ name: "odd-schemas", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: "plain", inputSchema: { type: "object" } },
      // A reference to nothing: no validator can compile it.
      { name: "odd", inputSchema: { type: "object" }, outputSchema: { type: "object", $ref: "#/$defs/missing" } },
    ],
  }))
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  await client.connect(clientSide)
  return server
}

describe("Unchecked.schemas", () => {
  it("lets a service be listed whatever its tools' output schemas say", async () => {
    const client = new Client({ name: "test", version: "1" }, { jsonSchemaValidator: Unchecked.schemas })
    const server = await serving(client)
    const names = await ToolPages.list(client, new AbortController().signal, (tool) => tool.name)
    expect(names).toEqual(["plain", "odd"])
    await client.close()
    await server.close()
  })

  it("where the SDK's own validator fails the whole listing", async () => {
    const client = new Client({ name: "test", version: "1" })
    const server = await serving(client)
    await expect(ToolPages.list(client, new AbortController().signal, (tool) => tool.name)).rejects.toThrow()
    await client.close()
    await server.close()
  })
})
