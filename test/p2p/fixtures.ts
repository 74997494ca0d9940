/**
 * Mesh peers for tests: a control-plane signing key, credentials minted with it, a trust the test can change, and
 * real hosts on 127.0.0.1 with ephemeral ports.
 */
import { peerIdFromString } from "@libp2p/peer-id"
import { Clock, Effect, type Scope } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Ed25519 from "../../src/crypto/Ed25519.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { NODE_ROLE, ROUTER_ROLE } from "../../src/domain/Policy.js"
import * as MeshHostLive from "../../src/layers/mesh/MeshHostLive.js"
import type { MeshTrust } from "../../src/p2p/Trust.js"
import type { MeshHostService } from "../../src/services/mesh/MeshHost.js"

export { NODE_ROLE, ROUTER_ROLE }

/** The control plane's signing key in these tests, and one nobody trusts. */
export const signer = { id: 1, ...Ed25519.generate() }
export const rogue = { id: 99, ...Ed25519.generate() }

/** A trust the test edits: the keys it knows and the peers it bans. */
export interface TestTrust {
  readonly trust: Effect.Effect<MeshTrust>
  readonly keys: Map<number, Uint8Array>
  readonly banned: Set<string>
}

export const makeTrust = (): TestTrust => {
  const keys = new Map<number, Uint8Array>([[signer.id, signer.publicKey]])
  const banned = new Set<string>()
  const view: MeshTrust = { keyFor: (id) => keys.get(id), isBanned: (peer) => banned.has(peer) }
  return { trust: Effect.succeed(view), keys, banned }
}

export type CredentialKind = "valid" | "none" | "expired" | "unknown-key"

export interface PeerOptions {
  readonly mode: "router" | "node"
  readonly trust: TestTrust
  readonly credential?: CredentialKind
  readonly labels?: Readonly<Record<string, string>>
  readonly listen?: ReadonlyArray<string>
  /** A valid credential that expires at this time (whole seconds). */
  readonly expiresAtMs?: number
}

export interface TestPeer extends MeshHostService {
  readonly key: ReturnType<typeof PeerKey.generate>
  /** Its first TCP address, with /p2p/<id>. */
  readonly address: string
}

export const mint = (
  peerId: string,
  role: string,
  labels: Readonly<Record<string, string>>,
  kind: CredentialKind,
): Effect.Effect<Uint8Array> =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    if (kind === "none") return new Uint8Array()
    const expiresAtMs = kind === "expired" ? now - 60_000 : now + 3_600_000
    return Biscuit.mint({ peerId, role, labels, expiresAtMs }, kind === "unknown-key" ? rogue : signer)
  })

export const startPeer = (options: PeerOptions): Effect.Effect<TestPeer, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const key = PeerKey.generate()
    const role = options.mode === "router" ? ROUTER_ROLE : NODE_ROLE
    const credential =
      options.expiresAtMs === undefined
        ? yield* mint(key.peerId, role, options.labels ?? {}, options.credential ?? "valid")
        : Biscuit.mint(
            { peerId: key.peerId, role, labels: options.labels ?? {}, expiresAtMs: options.expiresAtMs },
            signer,
          )
    const host = yield* MeshHostLive.make({
      seed: key.seed,
      credential: Effect.succeed(credential),
      trust: options.trust.trust,
      listen: options.listen ?? ["/ip4/127.0.0.1/tcp/0"],
      mode: options.mode,
    })
    const addresses = yield* host.addresses
    const address = addresses.find((a) => a.includes("/tcp/") && !a.includes("/p2p-circuit"))
    if (address === undefined) return yield* Effect.dieMessage("peer has no tcp address")
    return { ...host, key, address }
  })

/** Polls `check` in real time until it holds, or dies after `timeoutMs`. */
export const waitUntil = (
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    const attempts = Math.ceil(timeoutMs / 25)
    for (let i = 0; i < attempts; i++) {
      if (yield* Effect.promise(async () => check())) return
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.dieMessage(`condition not reached within ${timeoutMs} ms: ${what}`)
  })

/** A kad FIND_NODE request for `target`, encoded by hand (type = 4, key = the peer id multihash). */
export const findNode = (target: string): Uint8Array => {
  const key = peerIdFromString(target).toMultihash().bytes
  return Uint8Array.from([0x08, 0x04, 0x12, key.length, ...key])
}
