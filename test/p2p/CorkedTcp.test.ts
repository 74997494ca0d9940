import { createServer, type Socket } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import type { Connection, MultiaddrConnection, Upgrader } from "@libp2p/interface"
import { tcp } from "@libp2p/tcp"
import { multiaddr } from "@multiformats/multiaddr"
import { corked } from "../../src/p2p/CorkedTcp.js"
import * as QuietLogger from "../../src/p2p/QuietLogger.js"

const { logger } = QuietLogger.option({})

/** A loopback server that keeps what it receives. */
const sink = async () => {
  const received: Array<Buffer> = []
  const open = new Set<Socket>()
  const server = createServer((socket) => {
    open.add(socket)
    // The client resets its end when the test is over.
    socket.on("error", () => undefined)
    socket.on("data", (chunk: Buffer) => received.push(chunk))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

/** Dials the sink with libp2p's real TCP transport, wrapped; the upgrader hands back the raw connection. */
const dial = async (port: number) => {
  let upgraded: MultiaddrConnection | undefined
  const upgrader = {
    upgradeOutbound: async (connection: MultiaddrConnection) => {
      upgraded = connection
      return connection as unknown as Connection
    },
  } as unknown as Upgrader
  const transport = corked(tcp())({ logger } as never)
  await transport.dial(multiaddr(`/ip4/127.0.0.1/tcp/${port}`), {
    upgrader,
    signal: AbortSignal.timeout(5_000),
  } as never)
  if (upgraded === undefined) throw new Error("the transport did not upgrade the connection")
  return { connection: upgraded, socket: (upgraded as unknown as { socket: Socket }).socket }
}

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve))

describe("corked TCP", () => {
  it("holds a tick's writes on a connection and sends them together when the tick's work is done", async () => {
    const server = await sink()
    const { connection, socket } = await dial(server.port)
    try {
      connection.send(Uint8Array.of(1, 2))
      connection.send(Uint8Array.of(3))
      // Still in the tick that wrote: held in the socket, not yet given to the kernel.
      expect(socket.writableCorked).toBe(1)
      expect(socket.writableLength).toBe(3)
      await nextTick()
      expect(socket.writableCorked).toBe(0)
      expect(socket.writableLength).toBe(0)
      const deadline = Date.now() + 5_000
      while (Buffer.concat(server.received).length < 3 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 5))
      expect([...Buffer.concat(server.received)]).toEqual([1, 2, 3])
      // The next tick's writes are corked again, and released again.
      connection.send(Uint8Array.of(4))
      expect(socket.writableCorked).toBe(1)
      await nextTick()
      expect(socket.writableCorked).toBe(0)
    } finally {
      connection.abort(new Error("test over"))
      await server.close()
    }
  })
})
