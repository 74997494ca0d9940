/** The baseline: a bare node:http server answering fixed bytes, the ceiling any framework is measured against. */
import { createServer } from "node:http"

const [port, contentType = "application/json", body = '{"status":"ok"}', encoding = "utf8"] = process.argv.slice(2)
const bytes = Buffer.from(body, encoding === "base64" ? "base64" : "utf8")
createServer((_req, res) => {
  res.writeHead(200, { "content-type": contentType, "content-length": bytes.length })
  res.end(bytes)
}).listen(Number(port), "127.0.0.1")
