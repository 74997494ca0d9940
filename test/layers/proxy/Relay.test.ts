/**
 * A response relayed onto a peer's stream (Relay.relayResponse, as the serving node relays its backend's answer),
 * between two real hosts whose frames are recorded: an event stream whose first event came in the same read as its
 * head leaves in one frame, the head included; one whose first event is late still has its head sent at once.
 */
import { createServer, request, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import type { Stream } from "@libp2p/interface"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { relayResponse } from "../../../src/layers/proxy/Relay.js"
import { StreamResponse } from "../../../src/p2p/StreamResponse.js"
import { muxer } from "../../../src/p2p/Yamux.js"
import { getOnStream, type HostPair, serveOnStreams } from "../../p2p/httpOnStreams.js"
import { DATA, type Frame, recording } from "../../p2p/recordingMuxer.js"

const PROTOCOL = "/mesh/test/relay/1.0.0"

let hosts: HostPair | undefined
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
  const relay = createServer({ ServerResponse: StreamResponse }, (req, res) => {
    request({ port, host: "127.0.0.1", path: req.url ?? "/" }, (from) => relayResponse(from, res)).end()
  })
  hosts = await serveOnStreams(relay, PROTOCOL, [31, 32], recording(muxer(), sent))
})

afterAll(async () => {
  await hosts?.stop()
  upstream?.closeAllConnections()
  upstream?.close()
})

/** A GET on a stream of its own, its body as text; `onHead` runs when the response head has come. */
const get = async (path: string, onHead: () => void = () => {}) => {
  if (hosts === undefined) throw new Error("the hosts did not start")
  const { stream, body } = await getOnStream(hosts.connection, PROTOCOL, path, { onHead })
  return { stream, body: body.toString() }
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
