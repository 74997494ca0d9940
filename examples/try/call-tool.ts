/**
 * An agent's view of the mesh with the stock MCP SDK client: connect to a node's MCP server, find which peer
 * publishes an MCP service (discover_remote_services), and call a tool there (call_remote_tool). Without a tool it
 * calls the demo's `word_count` and `sha256`.
 *
 *   MESH_API_TOKEN="$(cat .mesh-one/node-b/api-token)" npx tsx examples/try/call-tool.ts http://127.0.0.1:8082/mcp
 *   MESH_API_TOKEN=... npx tsx examples/try/call-tool.ts http://127.0.0.1:8082/mcp mcp://everything/echo '{"message":"hi"}'
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"

const url = process.argv[2] ?? "http://127.0.0.1:8082/mcp"
const token = process.env.MESH_API_TOKEN ?? ""
const text = "hello from the mesh"
const calls: ReadonlyArray<readonly [string, Record<string, unknown>]> =
  process.argv[3] === undefined
    ? [
        ["mcp://demo/word_count", { text }],
        ["mcp://demo/sha256", { text }],
      ]
    : [[process.argv[3], JSON.parse(process.argv[4] ?? "{}") as Record<string, unknown>]]
const service = /^mcp:\/\/([^/]+)\//.exec(calls[0]?.[0] ?? "")?.[1]
if (service === undefined) throw new Error("name the tool as mcp://<service>/<tool>")

const client = new Client({ name: "mesh-one-try", version: "1.0.0" })
// The node's API token; `Authorization: Bearer` works too on /mcp, which never forwards it.
await client.connect(
  new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { "X-Mesh-Authentication": `Bearer ${token}` } },
  }),
)
const call = async (name: string, args: Record<string, unknown>) => {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  const body = result.content.map((c) => (c.type === "text" ? c.text : JSON.stringify(c))).join("")
  if (result.isError === true) throw new Error(`${name}: ${body}`)
  return { body, structured: result.structuredContent }
}

try {
  const found = await call("discover_remote_services", { type: "mcp", name: service })
  const peer = (found.structured as { services: ReadonlyArray<{ peer_id: string }> }).services[0]?.peer_id
  if (peer === undefined) throw new Error(`no peer publishes mcp://${service} yet; try again in a moment`)
  process.stdout.write(`mcp://${service} is on peer ${peer}\n`)
  for (const [tool, args] of calls) {
    const result = await call("call_remote_tool", { peer_id: peer, tool_name: tool, arguments: args })
    const shown = "text" in args && Object.keys(args).length === 1 ? JSON.stringify(args.text) : JSON.stringify(args)
    process.stdout.write(`${tool.slice(`mcp://${service}/`.length)}(${shown}) = ${result.body}\n`)
  }
} finally {
  await client.close()
}
