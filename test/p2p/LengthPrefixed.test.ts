/**
 * The decoder that reads noise's frames no longer asks its length decoder about an empty buffer (which throws, and
 * costs an exception per chunk a connection receives), and still reads frames split anywhere across chunks.
 */
import { LengthPrefixedDecoder } from "@libp2p/utils"
import { Uint8ArrayList } from "uint8arraylist"
import { describe, expect, it } from "vitest"
import * as LengthPrefixed from "../../src/p2p/LengthPrefixed.js"

/** Frames as noise writes them: a 2-byte big-endian length, then the bytes. */
const frame = (body: Uint8Array) => {
  const out = new Uint8Array(2 + body.byteLength)
  out[0] = body.byteLength >> 8
  out[1] = body.byteLength & 0xff
  out.set(body, 2)
  return out
}

/** noise's decoder, with the sizes of the buffers its length decoder was asked about. */
const noiseDecoder = () => {
  const asked: Array<number> = []
  const decoder = new LengthPrefixedDecoder({
    lengthDecoder: (data) => {
      asked.push(data.byteLength)
      if (data.byteLength < 2) throw new RangeError("Could not decode int16BE")
      return data instanceof Uint8Array ? (data[0] ?? 0) * 256 + (data[1] ?? 0) : data.getUint16(0)
    },
    maxBufferSize: 16 * 1024 * 1024,
    encodingLength: () => 2,
  })
  return { decoder, asked }
}

describe("the length-prefixed decoder, as installed", () => {
  LengthPrefixed.install()

  it("reads every frame of a stream cut at every byte, never asking about an empty buffer", () => {
    const bodies = [new Uint8Array([1, 2, 3]), new Uint8Array(300).fill(9), new Uint8Array([7]), new Uint8Array(0)]
    const wire = new Uint8ArrayList(...bodies.map(frame)).subarray()
    for (const cut of [1, 2, 3, 5, 64, wire.byteLength]) {
      const { decoder, asked } = noiseDecoder()
      const read: Array<Array<number>> = []
      for (let at = 0; at < wire.byteLength; at += cut) {
        for (const buf of decoder.decode(wire.subarray(at, at + cut))) read.push([...buf.subarray()])
      }
      // An empty frame carries nothing and is not passed on (as before).
      expect(read).toEqual(bodies.filter((b) => b.byteLength > 0).map((b) => [...b]))
      expect(asked.filter((n) => n === 0)).toEqual([])
    }
  })
})
