/**
 * A server answering one request per stream, between two real hosts: the response that ends ends its stream in the
 * same tick, so the stream's close leaves with the answer's last bytes rather than in a write of its own; the caller
 * still reads the whole answer, large ones included, after which the stream closes; and a response the server keeps
 * alive leaves the stream open.
 */
import { createServer, type ServerResponse } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { StreamResponse } from "../../src/p2p/StreamResponse.js"
import { StreamSocket } from "../../src/p2p/StreamSocket.js"
import { getOnStream, type HostPair, serveOnStreams } from "./httpOnStreams.js"

const PROTOCOL = "/mesh/test/response/1.0.0"
const LARGE = 1024 * 1024

let hosts: HostPair | undefined
/** Whether the stream's writing had ended when `res.end()` returned, per request path. */
const endedAtEnd = new Map<string, boolean>()
/** The serving side's socket, per request path: whether its writing closes (the stream's close sent). */
const served = new Map<string, StreamSocket>()

const answer = (path: string, res: ServerResponse) => {
  const body = path === "/large" ? new Uint8Array(LARGE).fill(0x61) : new TextEncoder().encode("done")
  if (path !== "/keep") res.setHeader("connection", "close")
  res.setHeader("content-length", String(body.byteLength))
  res.end(body)
  endedAtEnd.set(path, res.socket?.writableEnded === true)
  if (res.socket instanceof StreamSocket) served.set(path, res.socket)
}

beforeAll(async () => {
  const server = createServer({ ServerResponse: StreamResponse }, (req, res) => answer(req.url ?? "/", res))
  hosts = await serveOnStreams(server, PROTOCOL, [21, 22])
})

afterAll(async () => {
  await hosts?.stop()
})

/** One GET on a stream of its own: the body read, and whether the serving side closed its writing. */
const get = async (path: string) => {
  if (hosts === undefined) throw new Error("the hosts did not start")
  // `/keep` asks for the stream to stay open after the answer; the others ask for it to close.
  const headers = path === "/keep" ? { connection: "keep-alive" } : {}
  const { socket, body } = await getOnStream(hosts.connection, PROTOCOL, path, { headers })
  // The serving side's close, if it comes, is sent with the answer's last bytes or right behind them.
  const closing = served.get(path)
  for (let i = 0; i < 50 && closing?.writableFinished !== true; i++) await new Promise((r) => setTimeout(r, 10))
  const closed = closing?.writableFinished === true
  socket.destroy()
  return { body, closed }
}

describe("StreamResponse", () => {
  it("ends the stream in the tick the response ends, and the caller reads the whole answer", async () => {
    const small = await get("/small")
    expect(small.body.toString()).toBe("done")
    expect(small.closed).toBe(true)
    expect(endedAtEnd.get("/small")).toBe(true)
  })

  it("loses nothing of an answer larger than the stream's write room, and closes the stream after it", async () => {
    const large = await get("/large")
    expect(large.body.byteLength).toBe(LARGE)
    expect(large.body.every((byte) => byte === 0x61)).toBe(true)
    expect(large.closed).toBe(true)
    expect(endedAtEnd.get("/large")).toBe(true)
  })

  it("leaves a stream the response keeps alive open", async () => {
    const kept = await get("/keep")
    expect(kept.body.toString()).toBe("done")
    expect(kept.closed).toBe(false)
    expect(endedAtEnd.get("/keep")).toBe(false)
  })
})
