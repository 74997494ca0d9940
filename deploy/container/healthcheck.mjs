// The container's health check: GET /healthz of the program the entry point started, at the address the entry point
// wrote to $MESH_HEALTH_FILE (`http://host:port/healthz`, or `unix:<socket>` for a node's socket). Exit 0 when it
// answers 200 within 3 seconds, else 1 with one line saying why. Node built-ins only: the image has no curl.
import { readFileSync } from "node:fs"
import { request } from "node:http"

const file = process.env.MESH_HEALTH_FILE ?? "/tmp/mesh-health"

const fail = (reason) => {
  process.stderr.write(`unhealthy: ${reason}\n`)
  process.exit(1)
}

let target
try {
  target = readFileSync(file, "utf8").trim()
} catch {
  fail(`${file} is missing: the program was not started by the entry point, or has no health route`)
}

const onResponse = (response) => {
  response.resume()
  if (response.statusCode === 200) process.exit(0)
  fail(`${target} answered ${response.statusCode}`)
}
const probe = target.startsWith("unix:")
  ? request({ socketPath: target.slice("unix:".length), path: "/healthz", timeout: 3_000 }, onResponse)
  : request(target, { timeout: 3_000 }, onResponse)
probe.on("timeout", () => probe.destroy(new Error("no answer within 3s")))
probe.on("error", (error) => fail(`${target}: ${error.message}`))
probe.end()
