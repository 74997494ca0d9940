/**
 * HTTP between two real hosts, as the mesh carries it: a node:http server answering on the listener's streams of one
 * protocol (each stream a connection, `StreamSocket`), and a request written on a stream of its own from the dialer.
 */
import { request, type Server } from "node:http"
import type { Connection, Stream, StreamMuxerFactory } from "@libp2p/interface"
import * as OptimisticSelect from "../../src/p2p/OptimisticSelect.js"
import { StreamSocket } from "../../src/p2p/StreamSocket.js"
import { muxer } from "../../src/p2p/Yamux.js"
import { bareHost } from "./bareHost.js"

export interface HostPair {
  /** The dialer's connection to the listener. */
  readonly connection: Connection
  readonly stop: () => Promise<void>
}

/** Two hosts of the given key seeds, `server` answering `protocol` on the listener (through `listenerMuxer`, if given). */
export const serveOnStreams = async (
  server: Server,
  protocol: string,
  seeds: readonly [dialer: number, listener: number],
  listenerMuxer: () => StreamMuxerFactory = muxer(),
): Promise<HostPair> => {
  const dialer = await bareHost(seeds[0])
  const listener = await bareHost(seeds[1], listenerMuxer)
  await listener.handle(protocol, (stream, from) => {
    server.emit("connection", new StreamSocket(stream, from))
  })
  const connection = await dialer.dial(listener.getMultiaddrs()[0] as never)
  return {
    connection,
    stop: async () => {
      await dialer.stop()
      await listener.stop()
    },
  }
}

/**
 * A GET on a stream of its own; `onHead` runs when the response head has come, before its body is read. Without
 * `headers`, node:http asks for the connection (the stream) to close after the answer.
 */
export const getOnStream = async (
  connection: Connection,
  protocol: string,
  path: string,
  options: { readonly headers?: Record<string, string>; readonly onHead?: () => void } = {},
): Promise<{ readonly stream: Stream; readonly socket: StreamSocket; readonly body: Buffer }> => {
  const stream = await OptimisticSelect.open(connection, protocol)
  if (stream === undefined) throw new Error("the muxer was out of reach")
  const socket = new StreamSocket(stream, connection, protocol)
  const body = await new Promise<Buffer>((resolve, reject) => {
    const req = request({ createConnection: () => socket, path, headers: options.headers ?? {} }, (res) => {
      options.onHead?.()
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => resolve(Buffer.concat(chunks)))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })
  return { stream, socket, body }
}
