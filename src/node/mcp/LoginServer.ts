/**
 * The MCP server of a node that has no identity and no way to get one: one tool and one prompt, both telling the
 * user how to log the node in. An agent that connects before the node is enrolled can then guide its user instead
 * of failing on a 503.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import pkg from "../../../package.json" with { type: "json" }
import { joinCommand } from "../../domain/LoginCommand.js"

export const instructionsText = (controlPlane: string | undefined, dataDir: string) =>
  [
    "This mesh node is not logged in to a mesh yet, so it cannot reach other machines' services.",
    "To log it in, run this in a terminal on the same machine:",
    "",
    `    ${joinCommand(controlPlane, dataDir)}`,
    "",
    "(or --jwt-path <file> with an ID token from the mesh's identity provider; ask the mesh operator for either).",
    "The node picks up the new identity by itself within a few seconds; then reconnect this MCP client.",
  ].join("\n")

export const make = (controlPlane: string | undefined, dataDir: string): McpServer => {
  const text = instructionsText(controlPlane, dataDir)
  const server = new McpServer(
    { name: "mesh-node-login", version: pkg.version },
    { instructions: text, capabilities: { tools: {}, prompts: {} } },
  )
  server.registerTool(
    "get_login_instructions",
    {
      title: "How to log this node in",
      description: "Explains how to log this mesh node in so that its mesh tools become available.",
    },
    async () => ({ content: [{ type: "text", text }] }),
  )
  server.registerPrompt(
    "help_user_login",
    { title: "Help me log this node in", description: "Walks the user through logging this mesh node in." },
    async () => ({
      messages: [
        {
          role: "user",
          content: { type: "text", text: `Help me log my mesh node in. Here is what it says:\n\n${text}` },
        },
      ],
    }),
  )
  return server
}

/** Serves one request; stateless, a server and transport per request, since the login server keeps nothing. */
export const serve = async (
  req: IncomingMessage,
  res: ServerResponse,
  controlPlane: string | undefined,
  dataDir: string,
): Promise<void> => {
  const server = make(controlPlane, dataDir)
  const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
  res.once("close", () => {
    void transport.close()
    void server.close()
  })
  await server.connect(transport)
  await transport.handleRequest(req, res)
}
