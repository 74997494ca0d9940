/**
 * Optimistic multistream-select for a stream proposing one protocol: the proposal is sent and the stream used at
 * once, and the remote's echo is checked when its first bytes arrive, so a request travels with the select instead
 * of a round trip after it. js-libp2p 3.3 declares `negotiateFully: false` but its select (multistream-select 7)
 * ignores it and always waits for the echo; this is the dialer half of that select, done here. The listener side is
 * libp2p's own `handle`, which keeps what follows the proposal for the handler.
 *
 * A peer that does not serve the protocol answers `na`: the stream then fails with `ProtocolRefused` before any of
 * its bytes reach the caller. What we sent after the proposal is read by that peer as a further proposal, which
 * starts with our first byte of data as its length: an HTTP request (a method's capital letter) never spells a
 * protocol name, so it is refused too (go-multistream#20 is the general form of this hazard).
 */
import type { Connection, Stream } from "@libp2p/interface"
import { Uint8ArrayList } from "uint8arraylist"

const PROTOCOL_ID = "/multistream/1.0.0"
/** multistream-select's own cap on a message; anything longer is not an echo. */
const MAX_MESSAGE = 1024

export class ProtocolRefused extends Error {
  constructor(readonly protocol: string) {
    super(`the peer does not serve ${protocol}`)
    this.name = "ProtocolRefused"
  }
}

/** One length-prefixed message of multistream-select: an unsigned varint length, then the text. */
const message = (text: string): Uint8Array => {
  const body = new TextEncoder().encode(`${text}\n`)
  const length: Array<number> = []
  let n = body.byteLength
  while (n >= 0x80) {
    length.push((n & 0x7f) | 0x80)
    n >>>= 7
  }
  length.push(n)
  const out = new Uint8Array(length.length + body.byteLength)
  out.set(length, 0)
  out.set(body, length.length)
  return out
}

/** What the dialer sends first: the header and its one proposal, in one write. */
export const proposal = (protocol: string): Uint8Array => {
  const header = message(PROTOCOL_ID)
  const proposed = message(protocol)
  const out = new Uint8Array(header.byteLength + proposed.byteLength)
  out.set(header, 0)
  out.set(proposed, header.byteLength)
  return out
}

/**
 * Reads the remote's answer to the proposal off the front of the stream: `feed` each chunk until it returns the
 * bytes that follow the echo (possibly none), or throws `ProtocolRefused`.
 */
export class EchoReader {
  private readonly buffer = new Uint8ArrayList()
  private expected: Array<string>

  constructor(readonly protocol: string) {
    this.expected = [PROTOCOL_ID, protocol]
  }

  /** `undefined` while the echo is incomplete. */
  feed(chunk: Uint8Array): Uint8Array | undefined {
    this.buffer.append(chunk)
    while (this.expected.length > 0) {
      const next = this.read()
      if (next === undefined) return undefined
      if (next !== this.expected[0]) throw new ProtocolRefused(this.protocol)
      this.expected = this.expected.slice(1)
    }
    return this.buffer.subarray()
  }

  /** One whole message, consumed; `undefined` when not all of it arrived. */
  private read(): string | undefined {
    let length = 0
    let shift = 0
    let at = 0
    for (;;) {
      if (at >= this.buffer.byteLength) return undefined
      const byte = this.buffer.get(at++)
      length |= (byte & 0x7f) << shift
      if ((byte & 0x80) === 0) break
      shift += 7
      if (shift > 14) throw new ProtocolRefused(this.protocol)
    }
    if (length > MAX_MESSAGE) throw new ProtocolRefused(this.protocol)
    if (this.buffer.byteLength < at + length) return undefined
    const text = new TextDecoder().decode(this.buffer.subarray(at, at + length))
    this.buffer.consume(at + length)
    if (!text.endsWith("\n")) throw new ProtocolRefused(this.protocol)
    return text.slice(0, -1)
  }
}

/** The parts of libp2p's connection this needs; its muxer is not in the public interface. */
interface Muxed {
  readonly muxer?: { readonly status: string; createStream(options?: object): Promise<Stream> | Stream }
}

/**
 * A new stream on the connection for `protocol`, not yet proposed, or `undefined` when the connection's muxer is out
 * of reach (the caller then negotiates in full). The caller sends the `proposal` ahead of its first bytes, in the
 * same frame (StreamSocket does), and reads through an EchoReader.
 */
export const open = async (connection: Connection, protocol: string): Promise<Stream | undefined> => {
  const muxer = (connection as unknown as Muxed).muxer
  if (muxer === undefined || typeof muxer.createStream !== "function" || connection.status !== "open") {
    return undefined
  }
  if (muxer.status !== "open") return undefined
  const stream = await muxer.createStream()
  stream.protocol = protocol
  return stream
}
