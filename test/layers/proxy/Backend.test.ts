/**
 * The proxy's last hop (Backend) against a backend that closes a kept-alive connection just as the proxy reuses it:
 * the race every keep-alive client meets when a server's idle timeout fires. A request that can be sent again (no
 * body, or one held whole) goes again on a fresh connection, as Node's documentation advises; one whose body streams
 * from the peer cannot be, and is answered 502.
 */
import { createServer as createHttpServer, request, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { createServer, type Server as NetServer, type Socket } from "node:net"
import { Duration, Effect, Exit, Option, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Forwarding from "../../../src/domain/Forwarding.js"
import type { ServiceSpec } from "../../../src/domain/NodeFile.js"
import * as Backend from "../../../src/layers/proxy/Backend.js"
import * as Deadlines from "../../../src/platform/Deadlines.js"

/** Requests the backend answered, and connections it reset as a second request arrived on them. */
let answered = 0
let reset = 0
let backend: NetServer
let front: Server
let scope: Scope.CloseableScope

/** An HTTP/1.1 backend that answers the first request of each connection and resets the connection at the second. */
const serve = (socket: Socket) => {
  let seen = 0
  let buffered = ""
  socket.on("data", (chunk) => {
    buffered += chunk.toString("latin1")
    while (buffered.includes("\r\n\r\n")) {
      const end = buffered.indexOf("\r\n\r\n") + 4
      const head = buffered.slice(0, end)
      const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? "0")
      if (buffered.length < end + length) return
      buffered = buffered.slice(end + length)
      seen += 1
      if (seen > 1) {
        reset += 1
        socket.resetAndDestroy()
        return
      }
      answered += 1
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
    }
  })
  socket.on("error", () => undefined)
}

const caller: Forwarding.Caller = { peerId: "12D3KooWBackendTestCaller", role: "node", labels: {} }

const fetchThrough = (method: string, body?: string, chunked = false) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const port = (front.address() as AddressInfo).port
    const headers: Record<string, string> = chunked
      ? { "transfer-encoding": "chunked" }
      : body === undefined
        ? {}
        : { "content-length": String(Buffer.byteLength(body)) }
    const req = request({ host: "127.0.0.1", port, method, path: "/x", headers, agent: false }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => {
        text += chunk
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    req.on("error", reject)
    req.end(body)
  })

beforeAll(async () => {
  backend = createServer(serve)
  await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve))
  const targetUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`
  scope = Effect.runSync(Scope.make())
  const hop = await Effect.runPromise(
    Effect.gen(function* () {
      const deadlines = yield* Deadlines.make(Duration.millis(100))
      return yield* Backend.make(Option.some(Duration.seconds(10)), deadlines)
    }).pipe(Scope.extend(scope)),
  )
  const service = { name: "demo", type: "http", target_url: targetUrl } as unknown as ServiceSpec
  front = createHttpServer((req, res) => {
    const target: Backend.Target = {
      service,
      targetUrl,
      backend: Forwarding.target(targetUrl),
      path: "/x",
      query: "",
      caller,
    }
    void Effect.runPromise(hop.forward(req, res, target))
  })
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve))
})

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await new Promise((resolve) => front.close(resolve))
  await new Promise((resolve) => backend.close(resolve))
})

describe("the proxy's hop to a backend that closes a kept-alive connection as it is reused", () => {
  it("sends a request without a body again on a fresh connection, and its caller never sees the reset", async () => {
    expect(await fetchThrough("GET")).toEqual({ status: 200, body: "ok" })
    // The second goes on the kept-alive connection, which the backend resets; the hop tries once more.
    expect(await fetchThrough("GET")).toEqual({ status: 200, body: "ok" })
    expect(reset).toBe(1)
    expect(answered).toBe(2)
  })

  it("does not send again a body that streamed from the peer: that request is answered 502", async () => {
    // The connection the last answer left is reused and reset; a chunked body cannot be replayed.
    const answer = await fetchThrough("POST", "streamed", true)
    expect(answer.status).toBe(502)
    expect(JSON.parse(answer.body)).toMatchObject({ error: "bad_gateway" })
    expect(reset).toBe(2)
    expect(answered).toBe(2)
  })
})
