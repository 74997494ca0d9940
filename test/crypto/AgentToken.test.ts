import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as AgentToken from "../../src/crypto/AgentToken.js"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Ed25519 from "../../src/crypto/Ed25519.js"
import type * as AgentScope from "../../src/domain/AgentScope.js"
import * as PeerKey from "../../src/domain/PeerKey.js"

const root = { id: 3, ...Ed25519.generate() }
const keyFor = (id: number) => (id === root.id ? root.publicKey : undefined)
const now = Date.parse("2026-06-01T12:00:00Z")
const node = PeerKey.generate()
const stranger = PeerKey.generate()
const credentialOf = (peerId: string, expiresAtMs = now + 3_600_000) =>
  Biscuit.mint({ peerId, role: "mesh:role:node", labels: {}, expiresAtMs }, root)

const request: AgentScope.Request = {
  agent: "ide",
  services: ["http://docs"],
  tools: ["mcp://demo/word_count"],
  models: ["mesh-*"],
  methods: ["POST"],
  paths: ["/v1/*"],
  labels: { zone: "eu" },
}

const mintFor = (credential = credentialOf(node.peerId), seed = node.seed, ttl = 600_000) =>
  AgentToken.mint(credential, keyFor, seed, request, now + ttl)

describe("Agent tokens", () => {
  it("verify returns the scope that was minted, and the node", () => {
    const { token, scope } = Either.getOrThrow(mintFor())
    const verified = Either.getOrThrow(AgentToken.verify(token, keyFor, now))
    expect(verified.scope).toEqual(scope)
    expect(verified.scope).toEqual({ ...request, expiresAtMs: now + 600_000 })
    expect(verified.node.peerId).toBe(node.peerId)
    expect(verified.keyId).toBe(3)
  })

  it("an expiry past the credential's is cut to the credential's", () => {
    const { scope } = Either.getOrThrow(mintFor(credentialOf(node.peerId, now + 60_000), node.seed, 86_400_000))
    expect(scope.expiresAtMs).toBe(now + 60_000)
  })

  it("refuses an expired agent token, and one whose credential expired", () => {
    const { token } = Either.getOrThrow(mintFor())
    expect(AgentToken.verify(token, keyFor, now + 600_001)).toEqual(Either.left("agent_expired"))
    const short = Either.getOrThrow(mintFor(credentialOf(node.peerId, now + 1000)))
    expect(AgentToken.verify(short.token, keyFor, now + 2000)).toEqual(Either.left("expired"))
  })

  it("refuses a token with a byte altered", () => {
    const { token } = Either.getOrThrow(mintFor())
    for (const at of [token.length - 40, token.length - 100, Math.floor(token.length / 2), 30]) {
      const altered = new Uint8Array(token)
      altered[at] = (altered[at] as number) ^ 0x01
      expect(Either.isLeft(AgentToken.verify(altered, keyFor, now))).toBe(true)
    }
  })

  it("refuses the credential with its agent block removed: it is no agent token", () => {
    expect(AgentToken.verify(credentialOf(node.peerId), keyFor, now)).toEqual(Either.left("not_agent_token"))
  })

  it("refuses a block swapped for a wider one: whoever appends it cannot sign for the node", () => {
    // A peer that saw the node's credential in a handshake appends the block of a token it minted for itself,
    // proof included: signed by its own key, over its own peer id.
    const own = Either.getOrThrow(mintFor(credentialOf(stranger.peerId), stranger.seed))
    const block = Either.getOrThrow(Biscuit.open(own.token, keyFor)).blocks[0] as string
    const forged = Either.getOrThrow(Biscuit.append(credentialOf(node.peerId), keyFor, block))
    expect(AgentToken.verify(forged, keyFor, now)).toEqual(Either.left("bad_proof"))
    expect(Either.isRight(AgentToken.verify(own.token, keyFor, now))).toBe(true)
  })

  it("refuses a hand-written agent block whose proof is not the node's", () => {
    const minted = Either.getOrThrow(mintFor())
    const other = Either.getOrThrow(
      AgentToken.mint(credentialOf(node.peerId), keyFor, node.seed, { ...request, tools: ["mcp://demo/*"] }, now + 1),
    )
    // The proof of one scope pasted under another scope.
    const proof = /agent_proof\("([^"]+)"\)/.exec(Either.getOrThrow(Biscuit.open(minted.token, keyFor)).blocks[0] ?? "")
    const source = [
      'agent("ide");',
      'agent_tool("mcp://demo/*");',
      "agent_expiration(2026-06-01T12:10:00Z);",
      `agent_proof("${proof?.[1]}");`,
      "check if time($time), $time <= 2026-06-01T12:10:00Z;",
    ].join("\n")
    const pasted = Either.getOrThrow(Biscuit.append(credentialOf(node.peerId), keyFor, source))
    expect(AgentToken.verify(pasted, keyFor, now)).toEqual(Either.left("bad_proof"))
    expect(Either.isRight(AgentToken.verify(other.token, keyFor, now))).toBe(true)
  })

  it("refuses a token attenuated further, and a block holding statements of its own", () => {
    const { token } = Either.getOrThrow(mintFor())
    const further = Either.getOrThrow(Biscuit.append(token, keyFor, 'agent("root");'))
    expect(AgentToken.verify(further, keyFor, now)).toEqual(Either.left("attenuated"))
    const minted = Either.getOrThrow(Biscuit.open(token, keyFor)).blocks[0] as string
    const extra = Either.getOrThrow(Biscuit.append(credentialOf(node.peerId), keyFor, `${minted}\nrole("admin");`))
    expect(AgentToken.verify(extra, keyFor, now)).toEqual(Either.left("bad_block"))
  })

  it("refuses a token under an unknown root key", () => {
    const { token } = Either.getOrThrow(mintFor())
    expect(AgentToken.verify(token, () => undefined, now)).toEqual(Either.left("unknown_key"))
  })

  it("a node cannot mint from a credential that is not its own", () => {
    expect(AgentToken.mint(credentialOf(stranger.peerId), keyFor, node.seed, request, now + 1000)).toEqual(
      Either.left("bad_proof"),
    )
  })
})
