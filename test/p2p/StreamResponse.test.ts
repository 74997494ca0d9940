/**
 * A server answering one request per stream, between two real hosts: the response that ends ends its stream in the
 * same tick, so the stream's close leaves with the answer's last bytes rather than in a write of its own; the caller
 * still reads the whole answer, large ones included, after which the stream closes; and a response the server keeps
 * alive leaves the stream open.
 */
import { createServer, request, type Server, type ServerResponse } from "node:http"
import type { Connection, Libp2p } from "@libp2p/interface"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as OptimisticSelect from "../../src/p2p/OptimisticSelect.js"
import { StreamResponse } from "../../src/p2p/StreamResponse.js"
import { StreamSocket } from "../../src/p2p/StreamSocket.js"
import { bareHost } from "./bareHost.js"

const PROTOCOL = "/mesh/test/response/1.0.0"
const LARGE = 1024 * 1024

let dialer: Libp2p
let listener: Libp2p
let connection: Connection
let server: Server
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
  dialer = await bareHost(21)
  listener = await bareHost(22)
  server = createServer({ ServerResponse: StreamResponse }, (req, res) => answer(req.url ?? "/", res))
  await listener.handle(PROTOCOL, (stream, from) => {
    server.emit("connection", new StreamSocket(stream, from))
  })
  connection = await dialer.dial(listener.getMultiaddrs()[0] as never)
})

afterAll(async () => {
  await dialer?.stop()
  await listener?.stop()
})

/** One GET on a stream of its own: the body read, and whether the serving side closed its writing. */
const get = async (path: string) => {
  const stream = await OptimisticSelect.open(connection, PROTOCOL)
  if (stream === undefined) throw new Error("the muxer was out of reach")
  const socket = new StreamSocket(stream, connection, PROTOCOL)
  const body = await new Promise<Buffer>((resolve, reject) => {
    // Without an agent node:http asks for the connection to close; `/keep` asks for it to stay.
    const headers = path === "/keep" ? { connection: "keep-alive" } : {}
    const req = request({ createConnection: () => socket, path, headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => resolve(Buffer.concat(chunks)))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })
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
