/**
 * The demo inference provider mesh-one publishes from node B as `demo`: an OpenAI-compatible server with one model,
 * `mesh-demo`, that answers deterministically (it repeats the last user message after a fixed greeting), whole or
 * streamed as server-sent events, one chunk per word, ending with `data: [DONE]`. `GET /v1/models`,
 * `POST /v1/chat/completions` and `POST /v1/completions`, errors in OpenAI's shape.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Effect, type Scope } from "effect"
import { type AddressInUse, listen } from "./Serve.js"

export const SERVICE_NAME = "demo"
export const MODEL = "mesh-demo"
const MAX_BODY = 1024 * 1024

/** What the model says to `prompt`. */
export const reply = (prompt: string) => `Hello from the mesh! You said: ${prompt.trim()}`

/** The words of a reply with the spaces before them, so the chunks join back into the reply. */
const chunks = (text: string) => text.match(/\s*\S+/g) ?? [text]

const words = (text: string) => text.split(/\s+/).filter((w) => w.length > 0).length

interface Message {
  readonly role?: unknown
  readonly content?: unknown
}

/** The text of a message's content: a string, or the text parts of an array. */
const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((part: { readonly text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("")
      : ""

const lastUserText = (messages: ReadonlyArray<Message>) =>
  textOf([...messages].reverse().find((m) => m.role === "user")?.content)

const send = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))

const fail = (res: ServerResponse, status: number, message: string, code: string) =>
  send(res, status, { error: { message, type: "invalid_request_error", param: null, code } })

const readJson = (req: IncomingMessage): Promise<Record<string, unknown> | undefined> =>
  new Promise((resolve) => {
    const parts: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY) parts.push(chunk)
    })
    req.once("error", () => resolve(undefined))
    req.once("end", () => {
      if (size > MAX_BODY) return resolve(undefined)
      try {
        const value: unknown = JSON.parse(Buffer.concat(parts).toString("utf8"))
        resolve(typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined)
      } catch {
        resolve(undefined)
      }
    })
  })

const complete = (res: ServerResponse, body: Record<string, unknown>, chat: boolean) => {
  const prompt = chat
    ? lastUserText(Array.isArray(body.messages) ? (body.messages as ReadonlyArray<Message>) : [])
    : textOf(Array.isArray(body.prompt) ? body.prompt.join("\n") : body.prompt)
  const text = reply(prompt)
  const usage = {
    prompt_tokens: words(prompt),
    completion_tokens: words(text),
    total_tokens: words(prompt) + words(text),
  }
  const id = chat ? "chatcmpl-mesh-demo" : "cmpl-mesh-demo"
  const head = { id, created: 0, model: MODEL }
  if (body.stream !== true) {
    return send(res, 200, {
      ...head,
      object: chat ? "chat.completion" : "text_completion",
      choices: [
        chat
          ? { index: 0, message: { role: "assistant", content: text }, finish_reason: "stop", logprobs: null }
          : { index: 0, text, finish_reason: "stop", logprobs: null },
      ],
      usage,
    })
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const event = (choices: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({ ...head, object: chat ? "chat.completion.chunk" : "text_completion", choices, ...extra })}\n\n`,
    )
  const choice = (content: string | undefined, finish: string | null) =>
    chat
      ? { index: 0, delta: content === undefined ? {} : { role: "assistant", content }, finish_reason: finish }
      : { index: 0, text: content ?? "", finish_reason: finish }
  for (const piece of chunks(text)) event([choice(piece, null)])
  event([choice(undefined, "stop")])
  const options = body.stream_options as { readonly include_usage?: unknown } | undefined
  if (options?.include_usage === true) event([], { usage })
  res.end("data: [DONE]\n\n")
}

const handle = (req: IncomingMessage, res: ServerResponse) => {
  const path = (req.url ?? "/").split("?")[0]
  if (req.method === "GET" && path === "/v1/models") {
    return send(res, 200, { object: "list", data: [{ id: MODEL, object: "model", created: 0, owned_by: "mesh-demo" }] })
  }
  const chat = path === "/v1/chat/completions"
  if (req.method !== "POST" || !(chat || path === "/v1/completions")) {
    return fail(res, 404, `no route ${req.method} ${path}`, "not_found")
  }
  void readJson(req).then((body) => {
    if (body === undefined) return fail(res, 400, "the body must be a JSON object of at most 1 MiB", "invalid_json")
    if (body.model !== MODEL) return fail(res, 404, `model ${String(body.model)} does not exist`, "model_not_found")
    return complete(res, body, chat)
  })
}

/** Serves the demo provider on 127.0.0.1:`port` for the life of the scope; its root URL (the node adds `/v1/...`). */
export const make = (port: number): Effect.Effect<string, AddressInUse, Scope.Scope> =>
  Effect.map(listen(port, handle), (bound) => `http://127.0.0.1:${bound}`)
