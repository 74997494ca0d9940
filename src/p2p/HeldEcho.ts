/**
 * A listener's protocol echo held back for its handler's first bytes. libp2p's multistream-select answers a proposal
 * the moment it reads it: the header's echo, then the protocol's, one frame each, in a write of their own. A dialer
 * that proposed optimistically (OptimisticSelect) has already sent its request and does not wait for that answer;
 * it only checks it when the answer's bytes arrive. So for such a stream the echo can travel with the answer, and a
 * proxied request costs the serving node one write fewer, the calling node one wake fewer.
 *
 * Held only when it cannot stall anyone: the protocol is one the mesh's dialers propose optimistically, and this
 * stream's dialer did (it sent bytes beyond its proposal before the echo was written: it waits for nothing). Any
 * other stream, a refusal (`na`), and anything unexpected go out at once as before. The held echo leaves with the
 * handler's first write, or before the stream's close if the handler writes nothing; a reset throws it away with
 * the stream.
 */
import { Uint8ArrayList } from "uint8arraylist"
import { message, PROTOCOL_ID } from "./OptimisticSelect.js"

/** What of a yamux stream this wraps: its sending, its closing and the window that tells what has arrived. */
export interface EchoStream {
  send: (data: Uint8Array | Uint8ArrayList) => boolean
  close: (options?: unknown) => Promise<void>
  readonly recvWindow: number
  readonly recvWindowCapacity: number
}

const HEADER = message(PROTOCOL_ID)

const equal = (data: Uint8Array | Uint8ArrayList, expected: Uint8Array): boolean => {
  if (data.byteLength !== expected.byteLength) return false
  const bytes = data instanceof Uint8Array ? data : data.subarray()
  for (let i = 0; i < bytes.byteLength; i++) if (bytes[i] !== expected[i]) return false
  return true
}

/**
 * What holds the echo of each of `protocols` on an inbound stream when its dialer was optimistic; the echoes are
 * encoded once, here. What has arrived is read off the stream's receive window (granted again only at half use,
 * Yamux.ts); once a grant has reset it, the count reads low and the echo goes at once, which is always safe.
 */
export const holder = (protocols: ReadonlyArray<string>): ((stream: EchoStream) => void) => {
  const echoes = protocols.map(message)
  if (echoes.length === 0) return () => undefined
  return (stream) => install(stream, echoes)
}

const install = (stream: EchoStream, echoes: ReadonlyArray<Uint8Array>): void => {
  const send = stream.send.bind(stream)
  const close = stream.close.bind(stream)
  const received = () => stream.recvWindow - stream.recvWindowCapacity
  /** What is held so far: nothing (the next write may be the header's echo), the header, or header and protocol. */
  let held: Array<Uint8Array | Uint8ArrayList> = []

  const release = (data?: Uint8Array | Uint8ArrayList): boolean => {
    stream.send = send
    stream.close = close
    const parts = data === undefined ? held : [...held, data]
    held = []
    if (parts.length === 0) return true
    return send(parts.length === 1 ? (parts[0] as Uint8Array | Uint8ArrayList) : new Uint8ArrayList(...parts))
  }

  stream.send = (data) => {
    const holds =
      held.length === 0
        ? equal(data, HEADER) && received() > HEADER.byteLength
        : held.length === 1 &&
          echoes.some((echo) => equal(data, echo) && received() > HEADER.byteLength + echo.byteLength)
    if (!holds) return release(data)
    held.push(data)
    return true
  }
  stream.close = (options) => {
    release()
    return close(options)
  }
}
