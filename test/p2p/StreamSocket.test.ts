/**
 * A StreamSocket given up by its own side, between two real hosts: the reason given is the one its owner hears, and
 * with no owner listening nothing escapes to take the process down. A 24-node scale run lost nodes this way: a
 * proxied request abandoned by its client before the peer's protocol echo came reset the stream, the reset's 'end'
 * was read as the peer refusing the protocol, and that second error was emitted with nobody listening.
 */
import { Duplex } from "node:stream"
import type { Connection, Libp2p } from "@libp2p/interface"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import * as OptimisticSelect from "../../src/p2p/OptimisticSelect.js"
import { StreamSocket } from "../../src/p2p/StreamSocket.js"
import { bareHost } from "./bareHost.js"

const PROTOCOL = "/mesh/test/socket/1.0.0"

let dialer: Libp2p
let listener: Libp2p
let connection: Connection

beforeAll(async () => {
  dialer = await bareHost(11)
  listener = await bareHost(12)
  await listener.handle(PROTOCOL, () => undefined)
  connection = await dialer.dial(listener.getMultiaddrs()[0] as never)
})

afterAll(async () => {
  await dialer?.stop()
  await listener?.stop()
})

/** A socket proposing the protocol optimistically, nothing written yet: its echo cannot have come. */
const unconfirmed = async (): Promise<StreamSocket> => {
  const stream = await OptimisticSelect.open(connection, PROTOCOL)
  if (stream === undefined) throw new Error("the muxer was out of reach")
  return new StreamSocket(stream, connection, PROTOCOL)
}

const nextTicks = () => new Promise((resolve) => setImmediate(resolve))

describe("StreamSocket given up by its own side", () => {
  it("reports the reason it was given, not a refusal read from its own reset", async () => {
    const socket = await unconfirmed()
    const heard: Array<Error> = []
    socket.on("error", (error) => heard.push(error))
    const reason = new Error("the caller went away")
    socket.abort(reason)
    await nextTicks()
    expect(socket.destroyed).toBe(true)
    expect(heard).toEqual([reason])
  })

  it("leaves nothing unhandled when no owner listens", async () => {
    const escaped: Array<unknown> = []
    const record = (error: unknown) => escaped.push(error)
    process.prependListener("uncaughtException", record)
    try {
      const socket = await unconfirmed()
      socket.abort(new Error("the caller went away"))
      await nextTicks()
      expect(socket.destroyed).toBe(true)
    } finally {
      process.off("uncaughtException", record)
    }
    expect(escaped).toEqual([])
  })
})

describe("StreamSocket ended again once its writing finished", () => {
  const finished = async (): Promise<StreamSocket> => {
    const socket = await unconfirmed()
    socket.on("error", () => undefined)
    await new Promise<void>((resolve) => socket.end(resolve))
    expect(socket.writableFinished).toBe(true)
    return socket
  }

  // node:http's server does this when the remote finishes writing after our answer went: nobody reads the error
  // Node would build, so none is built.
  it("is left as it is, without Node's end (which builds an error nobody reads)", async () => {
    const socket = await finished()
    const nodeEnd = vi.spyOn(Duplex.prototype, "end")
    try {
      expect(socket.end()).toBe(socket)
      expect(nodeEnd).not.toHaveBeenCalled()
    } finally {
      nodeEnd.mockRestore()
    }
    socket.destroy()
  })

  it("still tells a callback that it had finished", async () => {
    const socket = await finished()
    const told = await new Promise<unknown>((resolve) => socket.end(resolve))
    expect((told as { code?: string }).code).toBe("ERR_STREAM_ALREADY_FINISHED")
    socket.destroy()
  })
})
