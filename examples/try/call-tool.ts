/**
 * An agent's view of the mesh with the stock MCP SDK client: connect to a node's MCP server, find who publishes the
 * `demo` MCP service, and call its `word_count` and `sha256` tools on that peer through `call_remote_tool`.
 *
 *   MESH_API_TOKEN="$(cat .mesh-one/node-b/api-token)" npx tsx examples/try/call-tool.ts http://127.0.0.1:8082/mcp
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"

const url = process.argv[2] ?? "http://127.0.0.1:8082/mcp"
const token = process.env.MESH_API_TOKEN ?? ""
const text = process.argv[3] ?? "hello from the mesh"

const client = new Client({ name: "mesh-one-try", version: "1.0.0" })
// The node's API token; `Authorization` would work too on /mcp, which never forwards it.
await client.connect(
  new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { "X-Mesh-Authentication": `Bearer ${token}` } },
  }),
)
const call = async (name: string, args: Record<string, unknown>) => {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  const body = result.content.map((c) => (c.type === "text" ? c.text : "")).join("")
  if (result.isError === true) throw new Error(`${name}: ${body}`)
  return { body, structured: result.structuredContent }
}

try {
  const found = await call("discover_remote_services", { type: "mcp", name: "demo" })
  const services = (found.structured as { services: ReadonlyArray<{ peer_id: string }> }).services
  const peer = services[0]?.peer_id
  if (peer === undefined) throw new Error("no peer publishes the demo MCP service yet; try again in a moment")
  console.log(`mcp://demo is on peer ${peer}`)
  for (const tool of ["word_count", "sha256"]) {
    const result = await call("call_remote_tool", {
      peer_id: peer,
      tool_name: `mcp://demo/${tool}`,
      arguments: { text },
    })
    console.log(`${tool}(${JSON.stringify(text)}) = ${result.body}`)
  }
} finally {
  await client.close()
}
