/**
 * The mesh's yamux (src/p2p/Yamux.ts) between two real hosts: a small exchange sends no frame that carries only a
 * flag or a window, while a stream that is only read still gets the window it needs.
 */
import type { Connection, Libp2p, Stream } from "@libp2p/interface"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { muxer } from "../../src/p2p/Yamux.js"
import { bareHost } from "./bareHost.js"
import { ACK, DATA, FIN, type Frame, RST, recording, SYN } from "./recordingMuxer.js"

const ANSWER = "/mesh/test/answer/1.0.0"
const SINK = "/mesh/test/sink/1.0.0"
const SUNK = 4 * 1024 * 1024
const CHUNK = 64 * 1024
/** Each frame a host's muxers send, by host. */
const sent = { dialer: [] as Array<Frame>, listener: [] as Array<Frame> }

const onStream = (side: keyof typeof sent, stream: Stream) =>
  sent[side].filter((frame) => frame.streamID === Number(stream.id))

/** A frame that carries no data and none of the flags that end a stream: only a window, or only an opening. */
const bare = (frame: Frame) => frame.type !== DATA && (frame.flag & (FIN | RST)) === 0

let dialer: Libp2p
let listener: Libp2p
let connection: Connection
let sinkReceived: Promise<number>
let resolveSink: (n: number) => void

beforeAll(async () => {
  dialer = await bareHost(31, recording(muxer(), sent.dialer))
  listener = await bareHost(32, recording(muxer(), sent.listener))
  await listener.handle(ANSWER, (stream) => {
    stream.addEventListener(
      "message",
      () => {
        stream.send(new TextEncoder().encode("pong"))
        void stream.close()
      },
      { once: true },
    )
  })
  // Reads only: past multistream-select's echo it never writes, so only grants let the dialer go on.
  sinkReceived = new Promise((resolve) => {
    resolveSink = resolve
  })
  await listener.handle(SINK, (stream) => {
    let received = 0
    stream.addEventListener("message", (event) => {
      received += event.data.byteLength
      if (received >= SUNK) resolveSink(received)
    })
  })
  connection = await dialer.dial(listener.getMultiaddrs()[0] as never)
})

afterAll(async () => {
  await dialer?.stop()
  await listener?.stop()
})

describe("the mesh's yamux", () => {
  it("opens and accepts a stream on its first data and grants no window for a small exchange", async () => {
    const stream = await connection.newStream(ANSWER)
    const answered = new Promise<string>((resolve) =>
      stream.addEventListener("message", (event) => resolve(new TextDecoder().decode(event.data.subarray())), {
        once: true,
      }),
    )
    stream.send(new TextEncoder().encode("ping"))
    await stream.close()
    expect(await answered).toBe("pong")

    const mine = onStream("dialer", stream)
    const theirs = onStream("listener", stream)
    // The opening travels with multistream-select's proposal, the acceptance with its echo.
    expect(mine[0]).toMatchObject({ type: DATA, flag: SYN })
    expect(theirs[0]).toMatchObject({ type: DATA, flag: ACK })
    expect(mine.filter(bare)).toEqual([])
    expect(theirs.filter(bare)).toEqual([])
  })

  it("grants a stream that is only read its window once half of it is used", async () => {
    const stream = await connection.newStream(SINK)
    const chunk = new Uint8Array(CHUNK).fill(3)
    for (let written = 0; written < SUNK; written += CHUNK) {
      if (!stream.send(chunk)) await stream.onDrain()
    }
    expect(await sinkReceived).toBe(SUNK)

    const frames = onStream("listener", stream)
    expect(frames[0]).toMatchObject({ type: DATA, flag: ACK })
    const grants = frames.filter((frame) => frame.type !== DATA)
    // yamux's own grants one per data frame received (64 here); half-window grants at most one per 128 KiB.
    expect(grants.length).toBeGreaterThan(0)
    expect(grants.length).toBeLessThanOrEqual(SUNK / (128 * 1024))
    stream.abort(new Error("test over"))
  }, 30_000)
})
