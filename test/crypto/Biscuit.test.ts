import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Ed25519 from "../../src/crypto/Ed25519.js"
import { BlockBuilder, PublicKey, Biscuit as RawBiscuit, SignatureAlgorithm } from "../../src/platform/biscuit-wasm.js"

const key = { id: 7, ...Ed25519.generate() }
const other = { id: 8, ...Ed25519.generate() }
const now = Date.parse("2026-06-01T12:00:00Z")
const facts: Biscuit.Facts = {
  peerId: "12D3KooWExamplePeer",
  role: "mesh:role:node",
  labels: { zone: "eu-west", env: "prod" },
  expiresAtMs: now + 3_600_000,
}
const keyFor = (id: number) => (id === key.id ? key.publicKey : undefined)

describe("Biscuit credentials", () => {
  it("verify returns the facts that were minted, under the key id", () => {
    const bytes = Biscuit.mint(facts, key)
    expect(Biscuit.verify(bytes, keyFor, now)).toEqual(Either.right({ facts, keyId: 7 }))
  })

  it("carries an OIDC identity", () => {
    const identity = { issuer: "https://issuer", subject: "alice", email: "alice@example.com", groups: ["eng", "ops"] }
    const bytes = Biscuit.mint({ ...facts, identity }, key)
    const verified = Either.getOrThrow(Biscuit.verify(bytes, keyFor, now))
    expect(verified.facts.identity).toEqual(identity)
  })

  it('a role, label or identity value holding ", " verifies and keeps every fact', () => {
    const identity = { issuer: "https://issuer", subject: "Doe, Jane", email: "jane@example.com", groups: ["a, b"] }
    const odd = { ...facts, role: "team, ops", labels: { site: "Paris, FR" }, identity }
    expect(Biscuit.verify(Biscuit.mint(odd, key), keyFor, now)).toEqual(Either.right({ facts: odd, keyId: 7 }))
  })

  it("refuses an expired credential unless asked to allow it", () => {
    const bytes = Biscuit.mint(facts, key)
    const later = facts.expiresAtMs + 1000
    expect(Biscuit.verify(bytes, keyFor, later)).toEqual(Either.left("expired"))
    expect(Either.isRight(Biscuit.verify(bytes, keyFor, later, { allowExpired: true }))).toBe(true)
  })

  it("refuses a credential whose key id is unknown or whose signature is not the key's", () => {
    expect(Biscuit.verify(Biscuit.mint(facts, other), keyFor, now)).toEqual(Either.left("unknown_key"))
    const forged = Biscuit.mint(facts, { id: key.id, seed: other.seed })
    expect(Biscuit.verify(forged, keyFor, now)).toEqual(Either.left("bad_signature"))
  })

  it("refuses garbage and tampered bytes", () => {
    expect(Biscuit.verify(new Uint8Array([1, 2, 3]), keyFor, now)).toEqual(Either.left("malformed"))
    const bytes = Biscuit.mint(facts, key)
    bytes[bytes.length - 10] = (bytes[bytes.length - 10] ?? 0) ^ 0xff
    expect(Either.isLeft(Biscuit.verify(bytes, keyFor, now))).toBe(true)
  })

  it("refuses an attenuated credential: only the control plane's block counts", () => {
    const token = RawBiscuit.fromBytes(
      Biscuit.mint(facts, key),
      PublicKey.fromBytes(key.publicKey, SignatureAlgorithm.Ed25519),
    )
    const block = new BlockBuilder()
    block.addCode(`role("mesh:role:admin");`)
    const attenuated = token.appendBlock(block).toBytes()
    expect(Biscuit.verify(attenuated, keyFor, now)).toEqual(Either.left("attenuated"))
  })

  it("will not mint a term that could forge a fact in the block source", () => {
    const identity = { issuer: "i", subject: 'x");\nrole("mesh:role:admin', groups: [] }
    expect(() => Biscuit.mint({ ...facts, identity }, key)).toThrow()
  })

  it("credential text is standard base64 and parses back, URL-safe too", () => {
    const bytes = Biscuit.mint(facts, key)
    const text = Biscuit.toText(bytes)
    expect(text).toMatch(/^[A-Za-z0-9+/]+=*$/)
    expect(Biscuit.fromText(text)).toEqual(Either.right(bytes))
    expect(Biscuit.fromText(Buffer.from(bytes).toString("base64url"))).toEqual(Either.right(bytes))
    expect(Either.isLeft(Biscuit.fromText(`${text.slice(0, 5)}`))).toBe(true)
    expect(Either.isLeft(Biscuit.fromText("not base64!"))).toBe(true)
  })
})
