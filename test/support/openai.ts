/**
 * A small OpenAI-compatible server on loopback, deterministic, for inference tests: `GET /v1/models` lists its
 * models, `POST /v1/chat/completions` and `POST /v1/completions` answer "Hello from <name>" whole or as server-sent
 * events (chunks `chunkDelayMs` apart, and when `gated`, each chunk after the first only once the test called
 * `advance`), with `usage` in the answer (and in a last chunk when `stream_options.include_usage`). Per model it
 * may instead answer an error status, never answer at all, or send one chunk and hold the stream open, recording
 * when its client left.
 * Every request is recorded, headers and body.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { Effect, type Scope } from "effect"

export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly model: string | undefined
  readonly body: string
}

export interface Options {
  readonly name: string
  readonly models: ReadonlyArray<string>
  /** Models answered with an error status instead. */
  readonly failing?: Readonly<Record<string, number>>
  /** Models whose stream sends one chunk and never ends. */
  readonly holding?: ReadonlyArray<string>
  /** Models whose completions are never answered, not even with a response head. */
  readonly silent?: ReadonlyArray<string>
  readonly chunkDelayMs?: number
}

export interface OpenAiBackend {
  readonly url: string
  readonly requests: Array<Received>
  /** `performance.now()` when each held stream's client went away. */
  readonly heldClosedAt: Array<number>
  /** Silent completions whose client went away. */
  readonly silentClosed: () => number
  /** Completions received for a model. */
  readonly count: (model: string) => number
  /** While true, streams wait for `advance()` before each chunk after the first. */
  gated: boolean
  readonly advance: () => void
}

export const USAGE = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 }
const WORDS = ["Hello", " from", " "]

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const openAi = (options: Options): Effect.Effect<OpenAiBackend, never, Scope.Scope> =>
  Effect.gen(function* () {
    const delay = options.chunkDelayMs ?? 100
    const waiting: Array<() => void> = []
    let permits = 0
    let silentClosed = 0
    const backend: OpenAiBackend = {
      url: "",
      requests: [],
      heldClosedAt: [],
      silentClosed: () => silentClosed,
      count: (model) => backend.requests.filter((r) => r.method === "POST" && r.model === model).length,
      gated: false,
      advance: () => {
        const next = waiting.shift()
        if (next === undefined) permits += 1
        else next()
      },
    }
    const gate = (): Promise<void> => {
      if (!backend.gated) return Promise.resolve()
      if (permits > 0) {
        permits -= 1
        return Promise.resolve()
      }
      return new Promise((resolve) => waiting.push(resolve))
    }

    const stream = async (res: ServerResponse, model: string, chat: boolean, usage: boolean) => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      let open = true
      res.once("close", () => {
        open = false
        if (options.holding?.includes(model)) backend.heldClosedAt.push(performance.now())
      })
      const chunk = (text: string | undefined, extra: Record<string, unknown> = {}) => ({
        id: `cmpl-${options.name}`,
        object: chat ? "chat.completion.chunk" : "text_completion",
        created: 0,
        model,
        choices:
          text === undefined
            ? []
            : [
                chat
                  ? { index: 0, delta: { content: text }, finish_reason: null }
                  : { index: 0, text, finish_reason: null },
              ],
        ...extra,
      })
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`)
      send(chunk(WORDS[0]))
      if (options.holding?.includes(model)) return
      for (const word of [...WORDS.slice(1), options.name]) {
        await sleep(delay)
        await gate()
        if (!open) return
        send(chunk(word))
      }
      if (usage) send(chunk(undefined, { usage: USAGE }))
      res.end("data: [DONE]\n\n")
    }

    const whole = (res: ServerResponse, model: string, chat: boolean) => {
      const text = `Hello from ${options.name}`
      const body = chat
        ? {
            id: `chatcmpl-${options.name}`,
            object: "chat.completion",
            created: 0,
            model,
            choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
            usage: USAGE,
          }
        : {
            id: `cmpl-${options.name}`,
            object: "text_completion",
            created: 0,
            model,
            choices: [{ index: 0, text, finish_reason: "stop" }],
            usage: USAGE,
          }
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify(body))
    }

    const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
      let parsed: { model?: unknown; stream?: unknown; stream_options?: { include_usage?: unknown } } = {}
      try {
        parsed = JSON.parse(text) as typeof parsed
      } catch {
        // recorded as it came; answered below as a bad request
      }
      const model = typeof parsed.model === "string" ? parsed.model : undefined
      backend.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, model, body: text })
      if (req.method === "GET" && req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" })
        return void res.end(
          JSON.stringify({
            object: "list",
            data: options.models.map((id) => ({ id, object: "model", created: 1, owned_by: options.name })),
          }),
        )
      }
      const chat = req.url === "/v1/chat/completions"
      if (req.method !== "POST" || !(chat || req.url === "/v1/completions") || model === undefined) {
        res.writeHead(400, { "content-type": "application/json" })
        return void res.end(JSON.stringify({ error: { message: "bad request", type: "invalid_request_error" } }))
      }
      if (options.silent?.includes(model)) {
        res.once("close", () => {
          silentClosed += 1
        })
        return
      }
      const status = options.failing?.[model]
      if (status !== undefined) {
        res.writeHead(status, { "content-type": "application/json" })
        return void res.end(JSON.stringify({ error: { message: `${options.name} failed`, type: "server_error" } }))
      }
      if (parsed.stream === true) return void stream(res, model, chat, parsed.stream_options?.include_usage === true)
      whole(res, model, chat)
    }

    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")))
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
        })
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        }),
    )
    return Object.assign(backend, { url: `http://127.0.0.1:${port}` })
  })
