/**
 * The dialer's half of optimistic multistream-select: the remote's echo is taken off the front of the stream however
 * it is split, the bytes behind it reach the caller whole, and any other answer refuses the stream.
 */
import { describe, expect, it } from "vitest"
import { EchoReader, ProtocolRefused, proposal } from "../../src/p2p/OptimisticSelect.js"

const PROTOCOL = "/mesh/proxy/1.0.0"
const bytes = (text: string) => new TextEncoder().encode(text)
const text = (data: Uint8Array | undefined) => (data === undefined ? undefined : new TextDecoder().decode(data))
const concat = (...parts: Array<Uint8Array>) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.byteLength
  }
  return out
}

describe("optimistic select", () => {
  it("writes the header and the proposal as multistream-select's length-prefixed lines", () => {
    const sent = proposal(PROTOCOL)
    expect(text(sent)).toBe(`\u0013/multistream/1.0.0\n\u0012${PROTOCOL}\n`)
  })

  it("the echo, byte by byte, then the answer: the answer reaches the caller whole", () => {
    const echo = proposal(PROTOCOL)
    const reader = new EchoReader(PROTOCOL)
    for (const byte of echo.subarray(0, -1)) expect(reader.feed(Uint8Array.of(byte))).toBeUndefined()
    expect(reader.feed(echo.subarray(-1))?.byteLength).toBe(0)
    expect(text(reader.feed(bytes("HTTP/1.1 200 OK\r\n")))).toBe("HTTP/1.1 200 OK\r\n")
  })

  it("the echo and the answer's first bytes in one chunk", () => {
    const reader = new EchoReader(PROTOCOL)
    expect(text(reader.feed(concat(proposal(PROTOCOL), bytes("HTTP/1.1 403"))))).toBe("HTTP/1.1 403")
  })

  it("`na`, another protocol, or a line without its newline refuses the stream", () => {
    const header = proposal("x").subarray(0, 20)
    for (const answer of ["\u0003na\n", "\u0012/mesh/other/1.0.0\n", `\u0011${PROTOCOL}`]) {
      const reader = new EchoReader(PROTOCOL)
      expect(() => reader.feed(concat(header, bytes(answer)))).toThrow(ProtocolRefused)
    }
  })
})
