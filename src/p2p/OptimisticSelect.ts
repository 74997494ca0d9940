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
import { type Connection, type Stream, TooManyOutboundProtocolStreamsError } from "@libp2p/interface"
import { Uint8ArrayList } from "uint8arraylist"

export const PROTOCOL_ID = "/multistream/1.0.0"
/** multistream-select's own cap on a message; anything longer is not an echo. */
const MAX_MESSAGE = 1024

export class ProtocolRefused extends Error {
  constructor(readonly protocol: string) {
    super(`the peer does not serve ${protocol}`)
    this.name = "ProtocolRefused"
  }
}

/** One length-prefixed message of multistream-select: an unsigned varint length, then the text. */
export const message = (text: string): Uint8Array => {
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

/** libp2p's registrar default for a protocol registered without `maxOutboundStreams`, or not registered at all. */
const DEFAULT_MAX_OUTBOUND_STREAMS = 64

/** The parts of libp2p's connection this needs; its muxer and registrar are not in the public interface. */
interface Muxed {
  readonly muxer?: { readonly status: string; createStream(options?: object): Promise<Stream> | Stream }
  readonly components?: {
    readonly registrar?: {
      getHandler(protocol: string): { readonly options: { readonly maxOutboundStreams?: number } }
    }
  }
}

/**
 * The outbound streams of `protocol` the connection may hold, as `newStream` reckons it: the limit registered with
 * the protocol's handler, or libp2p's default; `undefined` when the registrar is out of reach.
 */
const outboundLimit = (connection: Muxed, protocol: string): number | undefined => {
  const registrar = connection.components?.registrar
  if (registrar === undefined || typeof registrar.getHandler !== "function") return undefined
  try {
    return registrar.getHandler(protocol).options.maxOutboundStreams ?? DEFAULT_MAX_OUTBOUND_STREAMS
  } catch (error) {
    if (error instanceof Error && error.name === "UnhandledProtocolError") return DEFAULT_MAX_OUTBOUND_STREAMS
    throw error
  }
}

const outbound = (connection: Connection, protocol: string): number =>
  connection.streams.filter((stream) => stream.direction === "outbound" && stream.protocol === protocol).length

/**
 * A new stream on the connection for `protocol`, not yet proposed, or `undefined` when the connection's muxer or
 * registrar is out of reach (the caller then negotiates in full). The caller sends the `proposal` ahead of its first
 * bytes, in the same frame (StreamSocket does), and reads through an EchoReader.
 *
 * The stream comes from the muxer, past `newStream`, and so past its per-protocol cap: the cap is kept here, with
 * the same limit and the same error, so that callers cannot make the node open streams to a peer without bound.
 * Counted before the stream is made (a refused one costs the peer nothing) and again after, as `newStream` counts,
 * for opens that overlap.
 */
export const open = async (connection: Connection, protocol: string): Promise<Stream | undefined> => {
  const muxed = connection as unknown as Muxed
  const muxer = muxed.muxer
  if (muxer === undefined || typeof muxer.createStream !== "function" || connection.status !== "open") {
    return undefined
  }
  if (muxer.status !== "open") return undefined
  const limit = outboundLimit(muxed, protocol)
  if (limit === undefined) return undefined
  const tooMany = () =>
    new TooManyOutboundProtocolStreamsError(
      `Too many outbound protocol streams for protocol "${protocol}" - ${outbound(connection, protocol)}/${limit}`,
    )
  if (outbound(connection, protocol) >= limit) throw tooMany()
  const stream = await muxer.createStream()
  stream.protocol = protocol
  if (outbound(connection, protocol) > limit) {
    const error = tooMany()
    stream.abort(error)
    throw error
  }
  return stream
}
