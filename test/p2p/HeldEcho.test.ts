/**
 * A listener's protocol echo held for its handler's first bytes (src/p2p/HeldEcho.ts), between two real hosts whose
 * muxers record every frame they send: for a dialer that proposed optimistically the echo leaves with the answer,
 * in one frame; a dialer that waits for the echo gets it at once; a handler that closes without writing still
 * confirms the protocol first; a protocol not held is answered as before.
 */
import type { Connection, Libp2p, Stream } from "@libp2p/interface"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as OptimisticSelect from "../../src/p2p/OptimisticSelect.js"
import { StreamSocket } from "../../src/p2p/StreamSocket.js"
import { muxer } from "../../src/p2p/Yamux.js"
import { bareHost } from "./bareHost.js"
import { ACK, DATA, type Frame, recording } from "./recordingMuxer.js"

const HELD = "/mesh/test/held/1.0.0"
const SILENT = "/mesh/test/silent/1.0.0"
const PLAIN = "/mesh/test/plain/1.0.0"
/** Every frame the listener's muxers send. */
const sent: Array<Frame> = []

const framesOf = (stream: Stream) => sent.filter((frame) => frame.streamID === Number(stream.id))

let dialer: Libp2p
let listener: Libp2p
let connection: Connection
/** Lets the HELD handler answer the request it holds: the test first looks at what the listener sent meanwhile. */
const pending: Array<(answer: string) => void> = []

beforeAll(async () => {
  dialer = await bareHost(41)
  // The mesh's muxer holding the echo of HELD and SILENT.
  listener = await bareHost(42, recording(muxer({}, { holdEchoFor: [HELD, SILENT] }), sent))
  const answering = (stream: Stream) => {
    stream.addEventListener("message", () => pending.push((answer) => stream.send(new TextEncoder().encode(answer))), {
      once: true,
    })
  }
  await listener.handle(HELD, answering)
  await listener.handle(PLAIN, answering)
  // Reads the request, then closes without a word.
  await listener.handle(SILENT, (stream) => {
    stream.addEventListener("message", () => void stream.close(), { once: true })
  })
  connection = await dialer.dial(listener.getMultiaddrs()[0] as never)
})

afterAll(async () => {
  await dialer?.stop()
  await listener?.stop()
})

const until = async (done: () => boolean) => {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5))
  expect(done()).toBe(true)
}

/** A stream proposing `protocol` optimistically with the request `ping`, read through a StreamSocket. */
const optimistic = async (protocol: string) => {
  const stream = await OptimisticSelect.open(connection, protocol)
  if (stream === undefined) throw new Error("the muxer was out of reach")
  const socket = new StreamSocket(stream, connection, protocol)
  const read: Array<string> = []
  const heard: Array<Error> = []
  let ended = false
  socket.on("data", (chunk: Buffer) => read.push(chunk.toString()))
  socket.on("error", (error) => heard.push(error))
  socket.on("end", () => {
    ended = true
  })
  socket.write("ping")
  return { stream, socket, read, heard, ended: () => ended }
}

describe("an echo held for the answer", () => {
  it("leaves with the handler's first bytes, in one frame, when the dialer proposed optimistically", async () => {
    const before = pending.length
    const { stream, socket, read } = await optimistic(HELD)
    await until(() => pending.length > before)
    // The handler has the request and has not answered: nothing of the stream has left the listener.
    expect(framesOf(stream)).toEqual([])
    pending[before]?.("pong")
    await until(() => read.length > 0)
    expect(read.join("")).toBe("pong")
    const frames = framesOf(stream)
    expect(frames).toHaveLength(1)
    // The stream's acceptance rides it too.
    expect(frames[0]).toMatchObject({ type: DATA, flag: ACK })
    socket.destroy()
  })

  it("is sent at once to a dialer that waits for it", async () => {
    const before = pending.length
    // libp2p's own select: the proposal alone, the stream handed over once the echo came.
    const stream = await connection.newStream(HELD)
    stream.send(new TextEncoder().encode("ping"))
    await until(() => pending.length > before)
    const answered = new Promise<string>((resolve) =>
      stream.addEventListener("message", (event) => resolve(new TextDecoder().decode(event.data.subarray())), {
        once: true,
      }),
    )
    pending[before]?.("pong")
    expect(await answered).toBe("pong")
    stream.abort(new Error("test over"))
  })

  it("goes before the close of a handler that writes nothing", async () => {
    const { socket, heard, ended } = await optimistic(SILENT)
    await until(ended)
    // A close without the echo would read as the protocol refused.
    expect(heard).toEqual([])
    socket.destroy()
  })

  it("is not held for a protocol the listener was not told of", async () => {
    const before = pending.length
    const { stream, socket, read } = await optimistic(PLAIN)
    await until(() => pending.length > before)
    await until(() => framesOf(stream).length > 0)
    expect(read).toEqual([])
    pending[before]?.("pong")
    await until(() => read.length > 0)
    expect(read.join("")).toBe("pong")
    expect(framesOf(stream).filter((frame) => frame.type === DATA).length).toBeGreaterThan(1)
    socket.destroy()
  })
})
