/**
 * Crypto-bound ceilings: how many requests per second one core could serve if it did nothing but the cryptography
 * the request needs. The client-side signing in these loops is measured alone and subtracted.
 */
import { performance } from "node:perf_hooks"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Ed25519 from "../../src/crypto/Ed25519.js"
import * as Challenge from "../../src/domain/Challenge.js"
import * as PeerKey from "../../src/domain/PeerKey.js"

const WARMUP = 300

const rate = (n: number, work: () => void, clientOnly: () => void): number => {
  for (let i = 0; i < WARMUP; i++) work()
  const t0 = performance.now()
  for (let i = 0; i < n; i++) work()
  const total = performance.now() - t0
  const c0 = performance.now()
  for (let i = 0; i < n; i++) clientOnly()
  const client = performance.now() - c0
  return n / ((total - client) / 1000)
}

/** Challenge check + biscuit verify + biscuit mint. */
export const refresh = (): number => {
  const key = { id: 1, ...Ed25519.generate() }
  const peer = PeerKey.generate()
  const facts = { peerId: peer.peerId, role: "mesh:role:node", labels: { zone: "eu" } }
  let credential = Biscuit.mint({ ...facts, expiresAtMs: Date.now() + 86_400_000 }, key)
  return rate(
    3000,
    () => {
      const now = Date.now()
      const signature = Challenge.sign(peer.seed, "refresh", peer.peerId, now)
      Challenge.check({
        endpoint: "refresh",
        peerId: peer.peerId,
        publicKey: peer.publicKey,
        unixMs: now,
        signature,
        nowMs: now,
      })
      Biscuit.verify(credential, () => key.publicKey, now, { allowExpired: true })
      credential = Biscuit.mint({ ...facts, expiresAtMs: now + 86_400_000 }, key)
    },
    () => Challenge.sign(peer.seed, "refresh", peer.peerId, Date.now()),
  )
}

/**
 * Peer key decode and binding + challenge check + biscuit mint: what an auto-approved enrollment needs. Every
 * enrollment is a peer the server has never seen, so each one here is a fresh peer too: a peer whose key were already
 * in the key cache would skip the key import the server pays. The client's signing, subtracted, uses fresh peers of
 * its own for the same reason.
 */
export const enroll = (): number => {
  const N = 3000
  const key = { id: 1, ...Ed25519.generate() }
  const peers = Array.from({ length: WARMUP + N }, () => PeerKey.generate())
  const signers = Array.from({ length: N }, () => PeerKey.generate())
  let i = 0
  let j = 0
  return rate(
    N,
    () => {
      const peer = peers[i++] as (typeof peers)[number]
      const now = Date.now()
      const signature = Challenge.sign(peer.seed, "enroll", peer.peerId, now)
      PeerKey.bind(peer.peerId, PeerKey.toProtobuf(peer.publicKey))
      Challenge.check({
        endpoint: "enroll",
        peerId: peer.peerId,
        publicKey: peer.publicKey,
        unixMs: now,
        signature,
        nowMs: now,
      })
      Biscuit.mint({ peerId: peer.peerId, role: "mesh:role:node", labels: {}, expiresAtMs: now + 86_400_000 }, key)
    },
    () => {
      const peer = signers[j++] as (typeof signers)[number]
      Challenge.sign(peer.seed, "enroll", peer.peerId, Date.now())
    },
  )
}
