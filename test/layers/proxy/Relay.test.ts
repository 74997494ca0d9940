/**
 * A response relayed onto a peer's stream (Relay.relayResponse, as the serving node relays its backend's answer),
 * between two real hosts whose frames are recorded: an event stream whose first event came in the same read as its
 * head leaves in one frame, the head included; one whose first event is late still has its head sent at once.
 */
import { createServer, request, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import type { Connection, Libp2p, Stream } from "@libp2p/interface"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { relayResponse } from "../../../src/layers/proxy/Relay.js"
import * as OptimisticSelect from "../../../src/p2p/OptimisticSelect.js"
import { StreamResponse } from "../../../src/p2p/StreamResponse.js"
import { StreamSocket } from "../../../src/p2p/StreamSocket.js"
import { muxer } from "../../../src/p2p/Yamux.js"
import { bareHost } from "../../p2p/bareHost.js"
import { DATA, type Frame, recording } from "../../p2p/recordingMuxer.js"

const PROTOCOL = "/mesh/test/relay/1.0.0"

let dialer: Libp2p
let listener: Libp2p
let connection: Connection
let relay: Server
let upstream: Server
const sent: Array<Frame> = []
/** Lets `/apart` send its event. */
let release = () => {}

/** The backend: `/together` sends its head and one event in one write; `/apart` its head, then the event later. */
const answer = (path: string, res: ServerResponse) => {
  res.writeHead(200, { "content-type": "text/event-stream" })
  if (path === "/together") return void res.end("data: one\n\n")
  res.flushHeaders()
  release = () => res.end("data: late\n\n")
}

beforeAll(async () => {
  upstream = createServer((req, res) => answer(req.url ?? "/", res))
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))
  const port = (upstream.address() as AddressInfo).port
  dialer = await bareHost(31)
  listener = await bareHost(32, recording(muxer(), sent))
  relay = createServer({ ServerResponse: StreamResponse }, (req, res) => {
    request({ port, host: "127.0.0.1", path: req.url ?? "/" }, (from) => relayResponse(from, res)).end()
  })
  await listener.handle(PROTOCOL, (stream, from) => {
    relay.emit("connection", new StreamSocket(stream, from))
  })
  connection = await dialer.dial(listener.getMultiaddrs()[0] as never)
})

afterAll(async () => {
  await dialer?.stop()
  await listener?.stop()
  upstream?.closeAllConnections()
  upstream?.close()
})

/** A GET on a stream of its own; `onHead` runs when the response head has come, before its body is read. */
const get = async (path: string, onHead: () => void = () => {}) => {
  const stream = await OptimisticSelect.open(connection, PROTOCOL)
  if (stream === undefined) throw new Error("the muxer was out of reach")
  const socket = new StreamSocket(stream, connection, PROTOCOL)
  const body = await new Promise<string>((resolve, reject) => {
    const req = request({ createConnection: () => socket, path }, (res) => {
      onHead()
      let text = ""
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString()
      })
      res.on("end", () => resolve(text))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })
  return { stream, body }
}

/** The listener's frames on `stream` that carry the response: bytes, after multistream-select's two echoes. */
const answering = (stream: Stream) =>
  sent.filter((frame) => frame.streamID === Number(stream.id) && frame.type === DATA && frame.length > 0).slice(2)

describe("relayResponse onto a stream", () => {
  it("an event that came in the same read as its head leaves in the same frame", async () => {
    const { stream, body } = await get("/together")
    expect(body).toContain("data: one")
    expect(answering(stream)).toHaveLength(1)
  })

  it("a head whose event is late is sent at once: the backend sends the event only once the caller has the head", async () => {
    const { stream, body } = await get("/apart", () => release())
    expect(body).toContain("data: late")
    expect(answering(stream).length).toBeGreaterThan(1)
  })
})
