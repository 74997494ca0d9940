/**
 * The provider behind the node in bench/inference: an OpenAI-compatible server for one model. `GET /v1/models` lists
 * it; `POST /v1/chat/completions` reads the body and answers a small completion with usage, or with `"stream":true`
 * five chunks of server-sent events and `[DONE]`, all at once (the benchmark times the first).
 */
import { createServer } from "node:http"

const [port, model = "bench"] = process.argv.slice(2)
const models = Buffer.from(
  JSON.stringify({ object: "list", data: [{ id: model, object: "model", owned_by: "bench" }] }),
)
const completion = Buffer.from(
  JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 0,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "Hello from the bench" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 },
  }),
)
const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`
const events = ["Hello", " from", " the", " bench", "!"].map(chunk)

createServer((req, res) => {
  if (req.url === "/v1/models") {
    res.writeHead(200, { "content-type": "application/json", "content-length": models.length })
    return void res.end(models)
  }
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    if (!Buffer.concat(chunks).toString("utf8").includes('"stream":true')) {
      res.writeHead(200, { "content-type": "application/json", "content-length": completion.length })
      return void res.end(completion)
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    for (const event of events) res.write(event)
    res.end("data: [DONE]\n\n")
  })
}).listen(Number(port), "127.0.0.1")
