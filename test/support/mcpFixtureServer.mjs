/**
 * A 2025-era MCP server (Streamable HTTP with sessions, SDK 1.x) holding the fixture tools, resources and prompts the
 * 2025 conformance suite's active scenarios ask for, written from their descriptions: text, image, audio, embedded
 * and mixed content, logging and progress during a call, an error, sampling and elicitation (plain, with defaults,
 * with enum variants), a JSON Schema 2020-12 input schema, resources (text, binary, template, subscriptions),
 * prompts, logging/setLevel and completion. Its sampling and elicitation requests are sent as the suite's own fixture
 * server sends them: as requests of the session, not of the tool call, so they travel on the session's GET stream
 * (and are kept in an event store for a client that resumes it). Listens on 127.0.0.1:$PORT at /mcp, checks Host
 * (DNS rebinding), and prints `listening on port N`.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { ElicitResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { z } from "zod"

const PORT = Number(process.env.PORT ?? 0)
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const text = (t) => ({ content: [{ type: "text", text: t }] })

/** Events of every session's streams, for a client that resumes one with Last-Event-ID. */
const events = new Map()
const eventStore = {
  async storeEvent(streamId, message) {
    const id = `${streamId}::${String(events.size).padStart(8, "0")}`
    events.set(id, { streamId, message })
    return id
  },
  async replayEventsAfter(lastEventId, { send }) {
    const streamId = lastEventId.split("::")[0]
    for (const [id, event] of [...events].sort(([a], [b]) => a.localeCompare(b))) {
      if (event.streamId === streamId && id > lastEventId) await send(id, event.message)
    }
    return streamId
  },
}

const JSON_SCHEMA_2020_12 = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
  properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
  additionalProperties: false,
}

const empty = { type: "object", properties: {} }

/** The tools as listed: name, description, input schema. */
const TOOLS = [
  ["test_simple_text", "Tests simple text content response", empty],
  ["test_image_content", "Tests image content response", empty],
  ["test_audio_content", "Tests audio content response", empty],
  ["test_embedded_resource", "Tests embedded resource content response", empty],
  ["test_multiple_content_types", "Tests response with multiple content types", empty],
  ["test_tool_with_logging", "Tests tool that emits log messages during execution", empty],
  ["test_tool_with_progress", "Tests tool that reports progress notifications", empty],
  ["test_error_handling", "Tests error response handling", empty],
  [
    "test_sampling",
    "Tests server-initiated sampling",
    { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
  ],
  [
    "test_elicitation",
    "Tests server-initiated elicitation",
    { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  ],
  ["test_elicitation_sep1034_defaults", "Tests elicitation with default values (SEP-1034)", empty],
  ["test_elicitation_sep1330_enums", "Tests elicitation with enum schema variants (SEP-1330)", empty],
  ["json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features (SEP-1613)", JSON_SCHEMA_2020_12],
]

const SEP1034 = {
  type: "object",
  properties: {
    name: { type: "string", description: "User name", default: "John Doe" },
    age: { type: "integer", description: "User age", default: 30 },
    score: { type: "number", description: "User score", default: 95.5 },
    status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
    verified: { type: "boolean", description: "Verification status", default: true },
  },
  required: [],
}

const SEP1330 = {
  type: "object",
  properties: {
    untitledSingle: { type: "string", description: "Select one option", enum: ["option1", "option2", "option3"] },
    titledSingle: {
      type: "string",
      description: "Select one option with titles",
      oneOf: [
        { const: "value1", title: "First Option" },
        { const: "value2", title: "Second Option" },
        { const: "value3", title: "Third Option" },
      ],
    },
    legacyEnum: {
      type: "string",
      description: "Select one option (legacy)",
      enum: ["opt1", "opt2", "opt3"],
      enumNames: ["Option One", "Option Two", "Option Three"],
    },
    untitledMulti: {
      type: "array",
      description: "Select multiple options",
      minItems: 1,
      maxItems: 3,
      items: { type: "string", enum: ["option1", "option2", "option3"] },
    },
    titledMulti: {
      type: "array",
      description: "Select multiple options with titles",
      minItems: 1,
      maxItems: 3,
      items: {
        anyOf: [
          { const: "value1", title: "First Choice" },
          { const: "value2", title: "Second Choice" },
          { const: "value3", title: "Third Choice" },
        ],
      },
    },
  },
  required: [],
}

const makeServer = () => {
  const mcp = new McpServer(
    { name: "mesh-conformance-fixture", version: "1.0.0" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
      },
    },
  )
  const server = mcp.server
  const log = (data) =>
    server.notification({ method: "notifications/message", params: { level: "info", data } }).catch(() => undefined)
  /** A request of the session (not of the call): it goes on the session's GET stream. */
  const elicit = async (message, requestedSchema) => {
    const result = await server.request(
      { method: "elicitation/create", params: { mode: "form", message, requestedSchema } },
      ElicitResultSchema,
    )
    return text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`)
  }
  const calls = {
    test_simple_text: async () => text("This is a simple text response for testing."),
    test_image_content: async () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }),
    test_audio_content: async () => ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }),
    test_embedded_resource: async () => ({
      content: [
        {
          type: "resource",
          resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource." },
        },
      ],
    }),
    test_multiple_content_types: async () => ({
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
    }),
    test_tool_with_logging: async (_args, extra) => {
      for (const data of ["Tool execution started", "Tool processing data", "Tool execution completed"]) {
        await extra.sendNotification({ method: "notifications/message", params: { level: "info", data } })
        await sleep(50)
      }
      return text("Tool with logging executed successfully")
    },
    test_tool_with_progress: async (_args, extra) => {
      const progressToken = extra._meta?.progressToken ?? 0
      for (const progress of [0, 50, 100]) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
        })
        await sleep(50)
      }
      return text(String(progressToken))
    },
    test_error_handling: async () => ({
      isError: true,
      content: [{ type: "text", text: "This tool intentionally returns an error for testing" }],
    }),
    test_sampling: async (args) => {
      const result = await server.request(
        {
          method: "sampling/createMessage",
          params: {
            messages: [{ role: "user", content: { type: "text", text: String(args.prompt ?? "") } }],
            maxTokens: 100,
          },
        },
        z.object({}).passthrough(),
      )
      return text(`LLM response: ${result.content?.text ?? "No response"}`)
    },
    test_elicitation: async (args) =>
      elicit(String(args.message ?? ""), {
        type: "object",
        properties: { response: { type: "string", description: "User's response" } },
        required: ["response"],
      }),
    test_elicitation_sep1034_defaults: async () =>
      elicit("Please review and update the form fields with defaults", SEP1034),
    test_elicitation_sep1330_enums: async () => elicit("Please select options from the enum fields", SEP1330),
    json_schema_2020_12_tool: async (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  }
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map(([name, description, inputSchema]) => ({ name, description, inputSchema })),
  }))
  server.setRequestHandler(
    z.object({ method: z.literal("tools/call"), params: z.object({}).passthrough() }).passthrough(),
    async (request, extra) => {
      const call = calls[request.params.name]
      if (call === undefined) return { isError: true, content: [{ type: "text", text: "Unknown tool" }] }
      return call(request.params.arguments ?? {}, extra)
    },
  )

  mcp.registerResource(
    "static-text",
    "test://static-text",
    { title: "Static Text Resource", description: "A static text resource", mimeType: "text/plain" },
    async () => ({
      contents: [
        { uri: "test://static-text", mimeType: "text/plain", text: "This is the content of the static text resource." },
      ],
    }),
  )
  mcp.registerResource(
    "static-binary",
    "test://static-binary",
    { title: "Static Binary Resource", description: "A static binary resource", mimeType: "image/png" },
    async () => ({ contents: [{ uri: "test://static-binary", mimeType: "image/png", blob: PNG }] }),
  )
  mcp.registerResource(
    "template",
    new ResourceTemplate("test://template/{id}/data", { list: undefined }),
    { title: "Resource Template", description: "A resource template", mimeType: "application/json" },
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
  mcp.registerResource(
    "watched-resource",
    "test://watched-resource",
    { title: "Watched Resource", description: "A resource one can subscribe to", mimeType: "text/plain" },
    async () => ({
      contents: [{ uri: "test://watched-resource", mimeType: "text/plain", text: "Watched resource content" }],
    }),
  )
  server.setRequestHandler(z.object({ method: z.literal("resources/subscribe") }).passthrough(), async (request) => {
    log(`Subscribed to resource: ${request.params?.uri}`)
    return {}
  })
  server.setRequestHandler(z.object({ method: z.literal("resources/unsubscribe") }).passthrough(), async (request) => {
    log(`Unsubscribed from resource: ${request.params?.uri}`)
    return {}
  })

  mcp.registerPrompt("test_simple_prompt", { description: "A simple prompt without arguments" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }],
  }))
  mcp.registerPrompt(
    "test_prompt_with_arguments",
    { description: "A prompt with required arguments", argsSchema: { arg1: z.string(), arg2: z.string() } },
    async ({ arg1, arg2 }) => ({
      messages: [
        { role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } },
      ],
    }),
  )
  mcp.registerPrompt(
    "test_prompt_with_embedded_resource",
    { description: "A prompt that includes an embedded resource", argsSchema: { resourceUri: z.string() } },
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
  mcp.registerPrompt("test_prompt_with_image", { description: "A prompt that includes image content" }, async () => ({
    messages: [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } },
    ],
  }))

  server.setRequestHandler(z.object({ method: z.literal("logging/setLevel") }).passthrough(), async (request) => {
    log(`Log level set to: ${request.params?.level}`)
    return {}
  })
  server.setRequestHandler(z.object({ method: z.literal("completion/complete") }).passthrough(), async () => ({
    completion: { values: [], total: 0, hasMore: false },
  }))
  return mcp
}

const transports = new Map()

const readJson = (req) =>
  new Promise((resolve) => {
    const chunks = []
    req.on("data", (chunk) => chunks.push(chunk))
    req.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")))
      } catch {
        resolve(undefined)
      }
    })
  })

const refuse = (res, status, message) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }))
}

const http = createServer(async (req, res) => {
  if (new URL(req.url ?? "/", "http://x").pathname !== "/mcp") return refuse(res, 404, "Not found")
  const id = req.headers["mcp-session-id"]
  const existing = typeof id === "string" ? transports.get(id) : undefined
  if (req.method !== "POST") {
    if (existing === undefined) return refuse(res, 400, "Invalid or missing session ID")
    return existing.handleRequest(req, res)
  }
  const body = await readJson(req)
  if (existing !== undefined) return existing.handleRequest(req, res, body)
  if (id !== undefined || body?.method !== "initialize") return refuse(res, 400, "Invalid or missing session ID")
  const port = http.address().port
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore,
    enableDnsRebindingProtection: true,
    allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
    onsessioninitialized: (sessionId) => transports.set(sessionId, transport),
  })
  transport.onclose = () => {
    if (transport.sessionId !== undefined) transports.delete(transport.sessionId)
  }
  await makeServer().connect(transport)
  return transport.handleRequest(req, res, body)
})

http.listen(PORT, "127.0.0.1", () => console.log(`listening on port ${http.address().port}`))
