/**
 * libp2p's length-prefixed decoder (@libp2p/utils 7), which reads noise's frames on every connection, asks its
 * length decoder for the next frame's length until that throws a `RangeError`; with every frame of a chunk read, the
 * buffer is empty and noise's decoder throws one. That is an exception, with its stack trace, for nearly every chunk
 * a connection receives: 3.4% of a calling node's busy time on small proxied requests. An empty buffer holds no
 * length, whatever the decoder: this answers for it without the throw, with a length whose frame cannot be complete
 * (the decoder's loop then waits for more, as it does after the exception).
 */
import { LengthPrefixedDecoder } from "@libp2p/utils"
import type { Uint8ArrayList } from "uint8arraylist"

/** The decoder's own fields, which its types keep private. */
interface DecoderFields {
  lengthDecoder: (data: Uint8ArrayList | Uint8Array) => number
  readonly encodingLength: (length: number) => number
}

/** On the prototype: installed. On a decoder: its length decoder looked at. */
const INSTALLED = Symbol("mesh.lengthPrefixed.installed")
const WRAPPED = Symbol("mesh.lengthPrefixed.wrapped")

/**
 * Installs the shortcut on every decoder, once per process. A decoder whose prefix could be zero bytes long is left
 * as it is: for it, an empty frame would be complete.
 */
export const install = (): void => {
  const prototype = LengthPrefixedDecoder.prototype as unknown as Record<symbol, unknown> & {
    decode: (buf: Uint8Array | Uint8ArrayList) => Generator<Uint8ArrayList>
  }
  if (prototype[INSTALLED] === true) return
  const decode = prototype.decode
  prototype.decode = function (this: DecoderFields & Record<symbol, unknown>, buf) {
    if (this[WRAPPED] !== true) {
      this[WRAPPED] = true
      const length = this.lengthDecoder
      if (this.encodingLength(0) > 0) this.lengthDecoder = (data) => (data.byteLength === 0 ? 0 : length(data))
    }
    return decode.call(this, buf)
  }
  prototype[INSTALLED] = true
}
