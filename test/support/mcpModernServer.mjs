/**
 * A modern-only MCP server (revision 2026-07-28, `@modelcontextprotocol/server` 2.4, `legacy: 'reject'`: stateless,
 * no initialize, 2025-era requests refused) over Streamable HTTP at 127.0.0.1:$PORT/mcp, for the 2026-07-28
 * conformance suite. It holds the plain content tools, resources and prompts of the suite's fixture (text, image,
 * audio, embedded and mixed content, an error, static and templated resources, prompts, completion) and checks Host
 * (DNS rebinding). Prints `listening on port N`.
 */
import { createServer } from "node:http"
import {
  createMcpHandler,
  hostHeaderValidationResponse,
  McpServer,
  ResourceTemplate,
} from "@modelcontextprotocol/server"
import { z } from "zod"

const PORT = Number(process.env.PORT ?? 0)
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
const text = (t) => ({ content: [{ type: "text", text: t }] })

const factory = () => {
  const server = new McpServer(
    { name: "mesh-modern-reference", version: "1.0.0" },
    { capabilities: { tools: {}, resources: {}, prompts: {}, completions: {} } },
  )
  server.registerTool("test_simple_text", { description: "Simple text" }, async () =>
    text("This is a simple text response for testing."),
  )
  server.registerTool("test_image_content", { description: "Image content" }, async () => ({
    content: [{ type: "image", data: PNG, mimeType: "image/png" }],
  }))
  server.registerTool("test_audio_content", { description: "Audio content" }, async () => ({
    content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }],
  }))
  server.registerTool("test_embedded_resource", { description: "Embedded resource" }, async () => ({
    content: [
      {
        type: "resource",
        resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource." },
      },
    ],
  }))
  server.registerTool("test_multiple_content_types", { description: "Mixed content" }, async () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      {
        type: "resource",
        resource: {
          uri: "test://mixed-content-resource",
          mimeType: "application/json",
          text: JSON.stringify({ test: "data", value: 123 }),
        },
      },
    ],
  }))
  server.registerTool("test_error_handling", { description: "An error" }, async () => ({
    isError: true,
    content: [{ type: "text", text: "This tool intentionally returns an error for testing" }],
  }))
  server.registerTool(
    "echo",
    { description: "Echoes its text", inputSchema: z.object({ text: z.string() }) },
    async ({ text: t }) => text(t),
  )
  server.registerResource(
    "static-text",
    "test://static-text",
    { description: "A static text resource", mimeType: "text/plain" },
    async () => ({
      contents: [
        { uri: "test://static-text", mimeType: "text/plain", text: "This is the content of the static text resource." },
      ],
    }),
  )
  server.registerResource(
    "static-binary",
    "test://static-binary",
    { description: "A static binary resource", mimeType: "image/png" },
    async () => ({ contents: [{ uri: "test://static-binary", mimeType: "image/png", blob: PNG }] }),
  )
  server.registerResource(
    "template",
    new ResourceTemplate("test://template/{id}/data", { list: undefined }),
    { description: "A resource template", mimeType: "application/json" },
    async (uri, { id }) => ({
      contents: [
        {
          uri: uri.toString(),
          mimeType: "application/json",
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
        },
      ],
    }),
  )
  server.registerPrompt("test_simple_prompt", { description: "A simple prompt" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }],
  }))
  server.registerPrompt(
    "test_prompt_with_arguments",
    { description: "A prompt with arguments", argsSchema: z.object({ arg1: z.string(), arg2: z.string() }) },
    async ({ arg1, arg2 }) => ({
      messages: [
        { role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } },
      ],
    }),
  )
  server.registerPrompt(
    "test_prompt_with_embedded_resource",
    { description: "A prompt with a resource", argsSchema: z.object({ resourceUri: z.string() }) },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: "user",
          content: {
            type: "resource",
            resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." },
          },
        },
        { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
      ],
    }),
  )
  server.registerPrompt("test_prompt_with_image", { description: "A prompt with an image" }, async () => ({
    messages: [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } },
    ],
  }))
  return server
}

const handler = createMcpHandler(factory, { legacy: "reject" })

/** A node:http request as a web Request, its body read whole (MCP bodies are single JSON messages). */
const toWeb = async (req, port) => {
  const chunks = []
  for await (const chunk of req) chunks.push(chunk)
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    for (const v of Array.isArray(value) ? value : [value]) if (v !== undefined) headers.append(name, v)
  }
  const body = chunks.length === 0 ? undefined : Buffer.concat(chunks)
  return new Request(`http://127.0.0.1:${port}${req.url}`, { method: req.method, headers, body })
}

const http = createServer(async (req, res) => {
  const port = http.address().port
  const request = await toWeb(req, port)
  const response =
    hostHeaderValidationResponse(request, ["127.0.0.1", "localhost"]) ??
    (new URL(request.url).pathname === "/mcp"
      ? await handler.fetch(request)
      : new Response("Not found", { status: 404 }))
  res.writeHead(response.status, Object.fromEntries(response.headers))
  if (response.body === null) return res.end()
  for await (const chunk of response.body) res.write(chunk)
  res.end()
})

http.listen(PORT, "127.0.0.1", () => console.log(`listening on port ${http.address().port}`))
