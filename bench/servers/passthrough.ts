/**
 * The floor under a local completion's added time in bench/inference: one more HTTP hop and nothing else, in a
 * process of its own. It listens on a Unix socket (as a node's local API does) and on a TCP port (for readiness),
 * reads a POST's body whole and parses it (a router must read `model`), sends it on to the provider over a
 * keep-alive connection and pipes the answer back.
 */
import { rmSync } from "node:fs"
import { Agent, createServer, request } from "node:http"

const [port, socketPath, target] = process.argv.slice(2) as [string, string, string]
const upstream = new URL(target)
const agent = new Agent({ keepAlive: true })

const server = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const body = Buffer.concat(chunks)
    const model = (JSON.parse(body.toString("utf8")) as { model?: unknown }).model
    if (typeof model !== "string") {
      res.writeHead(400)
      return void res.end()
    }
    const out = request(
      {
        agent,
        host: upstream.hostname,
        port: upstream.port,
        method: "POST",
        path: req.url,
        headers: { "content-type": "application/json", "content-length": body.length },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      },
    )
    out.on("error", () => res.destroy())
    out.end(body)
  })
})
rmSync(socketPath, { force: true })
server.listen(socketPath)
createServer((_req, res) => res.end("ok")).listen(Number(port), "127.0.0.1")
