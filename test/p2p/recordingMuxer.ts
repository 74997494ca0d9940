/** A muxer whose connections record every yamux frame they send, for tests of what crosses between two hosts. */
import type { MessageStream, StreamMuxerFactory } from "@libp2p/interface"

/** yamux's frame types and flags (@libp2p/yamux's `FrameType` and `Flag`). */
export const DATA = 0
export const SYN = 1
export const ACK = 2
export const FIN = 4
export const RST = 8

export interface Frame {
  readonly type: number
  readonly flag: number
  readonly streamID: number
  readonly length: number
}

/** `base`, with every frame its muxers send pushed onto `sent`. */
export const recording = (base: () => StreamMuxerFactory, sent: Array<Frame>) => (): StreamMuxerFactory => {
  const factory = base()
  const create = factory.createStreamMuxer.bind(factory)
  factory.createStreamMuxer = (connection: MessageStream) => {
    const created = create(connection)
    // Streams take the muxer's `sendFrame` when they are made, so it is wrapped before any is.
    const fields = created as unknown as { sendFrame: (header: Frame, data?: unknown) => boolean }
    const send = fields.sendFrame.bind(created)
    fields.sendFrame = (header, data) => {
      sent.push({ ...header })
      return send(header, data)
    }
    return created
  }
  return factory
}
