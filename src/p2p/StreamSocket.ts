/**
 * A libp2p stream dressed as a `net.Socket`, so that `node:http` (client and server) speaks HTTP/1.1 over it. Reads
 * honour backpressure: when the HTTP side stops reading, the stream is paused, which stops yamux's window updates
 * and so the remote's sending. Writes wait until the stream's own buffer has room, which only the remote's window
 * makes (WRITE_ROOM).
 *
 * Closing: `end()` closes our writing side (the remote reads EOF). `destroy()` without an error closes our writing
 * side too and ignores what still arrives: node:http destroys a socket that way after a complete exchange, and a
 * reset then could cut off the other side's last bytes. `destroy(error)` resets the stream at once; callers that
 * abandon an exchange reset the stream themselves (`abort`).
 *
 * Errors: the socket's owner (node:http) listens for them while it uses the socket, but an exchange given up before
 * node:http took the socket, or after it let go, leaves nobody listening, and an 'error' event nobody listens for
 * ends the process. A peer decides when its side resets or refuses, so the socket keeps a listener of its own: the
 * error has done its work by destroying the socket, and owners that listen still hear it.
 */
import { Duplex } from "node:stream"
import type { Connection, Stream, StreamCloseEvent } from "@libp2p/interface"
import { Uint8ArrayList } from "uint8arraylist"
import { EchoReader, ProtocolRefused, proposal } from "./OptimisticSelect.js"

/**
 * yamux may have granted the remote up to 16 MiB of window before we pause; the stream resets when its read buffer
 * outgrows its limit (4 MiB by default), so the limit must exceed the largest window.
 */
const READ_BUFFER_LIMIT = 32 * 1024 * 1024

/**
 * What may wait in the socket unread before the stream is paused. Pausing stops yamux's window updates, so the
 * sender stalls for a round trip after every pause; with node's 16 KiB default a large body paused on nearly every
 * frame. The yamux window already bounds what can arrive.
 */
const READ_HIGH_WATER = 1024 * 1024

/**
 * What may wait in the stream's own write buffer, unsent for want of window, before a write is held back: one of
 * node:http's chunks. libp2p's `onDrain()` is no such bound: it resolves at the first drain and stays resolved
 * (@libp2p/utils 7), and a drain of the connection lets every stream's writer go whatever its window, while yamux's
 * write buffer has no limit. A peer that granted no window would have had the serving node take a backend's whole
 * answer into memory.
 */
const WRITE_ROOM = 64 * 1024

export class StreamSocket extends Duplex {
  /** node:http reads these from its sockets. */
  readonly connecting = false
  readonly remoteAddress: string
  readonly remotePeer: string
  readonly connection: Connection
  /** Bytes received and sent so far, as on a net.Socket: the serving side's idle timer reads them. */
  bytesRead = 0
  bytesWritten = 0
  private readonly stream: Stream
  /** The protocol's proposal, not sent yet: it goes in one frame with the first bytes written. */
  private proposal: Uint8Array | undefined

  /**
   * `proposed`: the protocol is proposed optimistically (OptimisticSelect): the proposal leads the first write, and
   * the echo is read off first.
   */
  constructor(stream: Stream, connection: Connection, proposed?: string) {
    super({ allowHalfOpen: true, readableHighWaterMark: READ_HIGH_WATER })
    this.stream = stream
    this.proposal = proposed === undefined ? undefined : proposal(proposed)
    this.connection = connection
    this.remotePeer = connection.remotePeer.toString()
    this.remoteAddress = this.remotePeer
    stream.maxReadBufferLength = Math.max(stream.maxReadBufferLength, READ_BUFFER_LIMIT)
    this.on("error", ignore)
    let echo = proposed === undefined ? undefined : new EchoReader(proposed)
    stream.addEventListener("message", (event) => {
      const data = event.data
      this.bytesRead += data.byteLength
      let parts: Iterable<Uint8Array> = data instanceof Uint8Array ? [data] : data
      if (echo !== undefined) {
        try {
          const rest = echo.feed(data instanceof Uint8Array ? data : data.subarray())
          if (rest === undefined) return
          echo = undefined
          parts = [rest]
        } catch (error) {
          return this.abort(asError(error))
        }
      }
      // A message that spans several of yamux's buffers is passed on buffer by buffer, not copied into one.
      let wanted = true
      for (const part of parts) if (part.byteLength > 0) wanted = this.push(part)
      if (!wanted && stream.readStatus === "readable") stream.pause()
    })
    // 'end': the remote closed its writing side and everything it sent has been delivered. Neither it nor 'close'
    // says anything once the socket is destroyed: our own `abort` closes the stream too, and its reason stands.
    stream.addEventListener("end", () => {
      if (this.destroyed) return
      // Closed before confirming the protocol: the remote refused the stream.
      if (echo !== undefined) this.abort(new ProtocolRefused(echo.protocol))
      else this.push(null)
    })
    stream.addEventListener("close", (event) => {
      if (this.destroyed) return
      if (event.error !== undefined) this.destroy(event.error)
      else if (echo !== undefined) this.abort(new ProtocolRefused(echo.protocol))
      else if (stream.readBufferLength === 0 && !this.readableEnded) this.push(null)
    })
  }

  /** Resets the stream: the remote sees the exchange fail, not end. */
  abort(reason: Error): void {
    // Destroyed first, so that the events the reset dispatches at once find the socket done with.
    if (this.destroyed) this.stream.abort(reason)
    else this.destroy(reason)
  }

  override _read(): void {
    if (this.stream.readStatus === "paused") this.stream.resume()
  }

  override _write(chunk: Uint8Array, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.send(chunk, callback)
  }

  override _writev(
    chunks: Array<{ chunk: Uint8Array; encoding: BufferEncoding }>,
    callback: (error?: Error | null) => void,
  ): void {
    this.send(new Uint8ArrayList(...chunks.map((c) => c.chunk)), callback)
  }

  private send(data: Uint8Array | Uint8ArrayList, callback: (error?: Error | null) => void): void {
    this.bytesWritten += data.byteLength
    try {
      this.stream.send(this.withProposal(data))
    } catch (error) {
      callback(asError(error))
      return
    }
    this.whenRoom(callback)
  }

  /**
   * Calls back once the stream's write buffer holds at most WRITE_ROOM: at once, or when what the remote's window let
   * through has emptied it enough. Looked at after each drain (once the stream has sent what it could) and when the
   * buffer is empty ('idle'); a stream that closes first fails the write.
   */
  private whenRoom(callback: (error?: Error | null) => void): void {
    const stream = this.stream
    if (stream.writeBufferLength <= WRITE_ROOM) {
      callback()
      return
    }
    let waiting = true
    const done = (error?: Error) => {
      // A check queued by a drain may come after the buffer's 'idle' has already called back.
      if (!waiting) return
      waiting = false
      stream.removeEventListener("drain", afterDrain)
      stream.removeEventListener("idle", afterIdle)
      stream.removeEventListener("close", closed)
      callback(error)
    }
    const check = () => {
      if (stream.writeBufferLength <= WRITE_ROOM) done()
    }
    // The stream sends what the drain allows in a microtask of its own, queued before this one.
    const afterDrain = () => queueMicrotask(check)
    // 'idle' comes while the stream is still in its send loop. Called back there, a socket that was ending closes at
    // once, and libp2p's close, seeing a send under way, waits for an 'idle' that has just gone by: the stream's
    // writing never closed, and the serving side of every large answer stayed open until its idle timer.
    const afterIdle = () => queueMicrotask(check)
    const closed = (event: StreamCloseEvent) => done(event.error ?? new Error("the stream closed"))
    stream.addEventListener("drain", afterDrain)
    stream.addEventListener("idle", afterIdle)
    stream.addEventListener("close", closed)
  }

  /**
   * node:http's server ends its socket when the remote finishes writing, and ours has often finished already (the
   * answer sent, the stream's writing closed). Node then builds an ERR_STREAM_ALREADY_FINISHED, stack trace and all,
   * that nobody reads: 1.3% of a serving node's busy time. A finished socket asked to end with nothing to write and
   * no callback to tell is left as it is; anything else goes to Node's own `end`.
   */
  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    if (chunk === undefined && encoding === undefined && callback === undefined && this.writableFinished) return this
    return super.end(chunk as never, encoding as never, callback as never)
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.closeWriting().then(() => callback(), callback)
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (error !== null) this.stream.abort(error)
    else void this.closeWriting()
    callback(error)
  }

  /** `data`, after the proposal while it is unsent. */
  private withProposal(data: Uint8Array | Uint8ArrayList): Uint8Array | Uint8ArrayList {
    const first = this.proposal
    if (first === undefined) return data
    this.proposal = undefined
    return new Uint8ArrayList(first, data)
  }

  private closeWriting(): Promise<void> {
    if (this.stream.writeStatus !== "writable") return Promise.resolve()
    // Closed before writing a byte: the proposal still goes, so the remote sees the protocol it was meant for.
    if (this.proposal !== undefined) this.stream.send(this.withProposal(new Uint8Array(0)))
    return this.stream.close().catch((error: unknown) => this.stream.abort(asError(error)))
  }

  // What node:http calls on a net.Socket; a stream has no such knobs.
  setTimeout(_ms: number, callback?: () => void): this {
    if (callback !== undefined) this.once("timeout", callback)
    return this
  }
  setNoDelay(): this {
    return this
  }
  setKeepAlive(): this {
    return this
  }
  ref(): this {
    return this
  }
  unref(): this {
    return this
  }
  address(): Record<string, never> {
    return {}
  }
}

const ignore = (): void => undefined

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)))
