/**
 * A peer that grants a stream no window cannot make the serving side take more of an answer into memory: whatever
 * else drains the connection. libp2p lets a stream's writer go at every drain of its connection, its own window
 * exhausted or not, and yamux's write buffer has no bound.
 */
import type { Connection, Libp2p, Stream } from "@libp2p/interface"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { StreamSocket } from "../../src/p2p/StreamSocket.js"
import { bareHost } from "./bareHost.js"

const STALLED = "/mesh/test/stalled/1.0.0"
const FLOOD = "/mesh/test/flood/1.0.0"
const CHUNK = 64 * 1024
const ANSWER = 64 * 1024 * 1024
const FLOOD_BYTES = 64 * 1024 * 1024

let dialer: Libp2p
let listener: Libp2p
let connection: Connection
/** What the serving side's socket on the stalled stream has taken so far, and its stream. */
const served = { accepted: 0, stream: undefined as Stream | undefined }

/** Writes `total` bytes through `socket`, as node:http writes a body: chunk by chunk, waiting while it is full. */
const writeAll = async (socket: StreamSocket, total: number, onAccepted: (n: number) => void) => {
  const chunk = new Uint8Array(CHUNK).fill(7)
  for (let sent = 0; sent < total && !socket.destroyed; sent += CHUNK) {
    const more = socket.write(chunk, () => onAccepted(CHUNK))
    if (!more) await new Promise((resolve) => socket.once("drain", resolve).once("close", resolve))
  }
}

beforeAll(async () => {
  dialer = await bareHost(21)
  listener = await bareHost(22)
  await listener.handle(STALLED, (stream, conn) => {
    served.stream = stream
    void writeAll(new StreamSocket(stream, conn), ANSWER, (n) => {
      served.accepted += n
    })
  })
  await listener.handle(FLOOD, (stream, conn) => {
    void writeAll(new StreamSocket(stream, conn), FLOOD_BYTES, () => undefined)
  })
  connection = await dialer.dial(listener.getMultiaddrs()[0] as never)
})

afterAll(async () => {
  await dialer?.stop()
  await listener?.stop()
})

describe("a stream its peer grants no window", () => {
  it("takes in at most a window and a chunk of the answer while the connection drains for another", async () => {
    const stalled = await connection.newStream(STALLED)
    // Read nothing: no window is granted past the first.
    stalled.pause()
    stalled.send(new Uint8Array([1]))
    const flood = await connection.newStream(FLOOD)
    flood.send(new Uint8Array([1]))
    let flooded = 0
    await new Promise<void>((resolve) => {
      flood.addEventListener("message", (event) => {
        flooded += event.data.byteLength
        if (flooded >= FLOOD_BYTES) resolve()
      })
    })
    expect(flooded).toBe(FLOOD_BYTES)
    // 256 KiB of window, and a chunk or two waiting for more.
    expect(served.accepted).toBeLessThanOrEqual(256 * 1024 + 2 * CHUNK)
    expect(served.stream?.writeBufferLength ?? 0).toBeLessThanOrEqual(2 * CHUNK)
    stalled.abort(new Error("test over"))
  }, 60_000)
})
