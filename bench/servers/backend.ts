/**
 * The service behind the proxy in bench/proxy: `GET /small` answers a few bytes, `GET /large` 1 MiB, and
 * `POST /sink` reads the whole body and answers its length. `GET /v1/models` lists one model, so that the node
 * publishing it as an inference service finds it healthy.
 */
import { createServer } from "node:http"

const [port] = process.argv.slice(2)
const small = Buffer.from('{"status":"ok"}')
const large = Buffer.alloc(1024 * 1024, 0x61)
const models = Buffer.from(
  JSON.stringify({ object: "list", data: [{ id: "bench", object: "model", owned_by: "bench" }] }),
)
createServer((req, res) => {
  if (req.url === "/large") {
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": large.length })
    return void res.end(large)
  }
  if (req.url === "/v1/models") {
    res.writeHead(200, { "content-type": "application/json", "content-length": models.length })
    return void res.end(models)
  }
  if (req.url === "/sink") {
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
    })
    req.on("end", () => {
      const body = Buffer.from(JSON.stringify({ size }))
      res.writeHead(200, { "content-type": "application/json", "content-length": body.length })
      res.end(body)
    })
    return
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": small.length })
  res.end(small)
}).listen(Number(port), "127.0.0.1")
