/**
 * libp2p's yamux with a stream's frames sent the way Go's yamux sends them: a receive window is granted again only
 * once half of it is used, not after every data frame, and a stream's opening (SYN) and accepting (ACK) flags ride
 * its first frame out rather than a frame of their own. A small proxied request sent five frames besides its data
 * and its close: the caller's opening and its grants for the echo and the answer, the serving side's acceptance and
 * its grant for the request; each an encryption, a write and a wake of the other process. Each stream keeps its
 * window and its flags; only when they travel changes.
 *
 * Why it is safe: a stream's dialer always speaks first (multistream-select's proposal), so an opening that waits
 * for the first frame is never waited for by the remote; a reset of a stream never announced is a frame the remote
 * ignores. An accepting flag the listener does not send for a while (a stream it only reads) delays nothing: libp2p's
 * yamux sends on a stream it opened whether or not the remote has accepted it. A grant the remote needs is never
 * held back: past half a window, the update goes out as before, flags and all.
 */
import type { MessageStream, StreamMuxerFactory } from "@libp2p/interface"
import { type YamuxMuxerInit, yamux } from "@libp2p/yamux"
import * as HeldEcho from "./HeldEcho.js"

/** yamux's stream states (`StreamState` in @libp2p/yamux, not exported). */
const INIT = 0
const PAUSED = 5

/** What of a yamux stream this reads and wraps: fields of `YamuxStream` the package's types keep internal. */
interface YamuxStreamFields {
  state: number
  recvWindow: number
  recvWindowCapacity: number
  sendWindowUpdate: () => void
}

interface YamuxMuxerFields {
  _newStream: (streamId: number, state: number, direction: string) => YamuxStreamFields
}

/** Grants a window again once half of it is used, and never sends a frame only to open the stream. */
const lazyGrants = (stream: YamuxStreamFields): void => {
  const grant = stream.sendWindowUpdate.bind(stream)
  stream.sendWindowUpdate = () => {
    // Paused: yamux records the time and sends nothing; its own method does that.
    if (stream.state === PAUSED) return grant()
    if (stream.state === INIT) return
    if (stream.recvWindowCapacity >= stream.recvWindow / 2) return
    grant()
  }
}

/**
 * The muxer factory for libp2p's `streamMuxers`. `holdEchoFor`: protocols whose echo an inbound stream holds for its
 * handler's first bytes when the dialer proposed optimistically (HeldEcho).
 */
export const muxer =
  (init: YamuxMuxerInit = {}, options: { readonly holdEchoFor?: ReadonlyArray<string> } = {}) =>
  (): StreamMuxerFactory => {
    const factory = yamux(init)()
    const holdEcho = HeldEcho.holder(options.holdEchoFor ?? [])
    const create = factory.createStreamMuxer.bind(factory)
    factory.createStreamMuxer = (connection: MessageStream) => {
      const created = create(connection)
      const fields = created as unknown as YamuxMuxerFields
      const newStream = fields._newStream.bind(created)
      fields._newStream = (streamId, state, direction) => {
        const stream = newStream(streamId, state, direction)
        lazyGrants(stream)
        if (direction === "inbound") holdEcho(stream as unknown as HeldEcho.EchoStream)
        return stream
      }
      return created
    }
    return factory
  }
