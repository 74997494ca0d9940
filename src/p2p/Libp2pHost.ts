/**
 * The libp2p configuration of a mesh peer. Routers are circuit-relay servers, DHT servers and gossip hubs; nodes are
 * relay clients (they can listen on `<router>/p2p-circuit`) and DHT clients. Everything speaks tcp + noise + yamux,
 * and every connection is handed to the gate (see Gate.ts) before it may do more than identify and ping.
 */
import { noise } from "@chainsafe/libp2p-noise"
import { autoNATv2 } from "@libp2p/autonat-v2"
import { type CircuitRelayService, circuitRelayServer, circuitRelayTransport } from "@libp2p/circuit-relay-v2"
import { generateKeyPairFromSeed } from "@libp2p/crypto/keys"
import { type GossipSub, gossipsub, StrictSign } from "@libp2p/gossipsub"
import { type Identify, identify } from "@libp2p/identify"
import type { ConnectionGater, Libp2p, PeerInfo } from "@libp2p/interface"
import { type KadDHT, kadDHT, passthroughMapper } from "@libp2p/kad-dht"
import { type Ping, ping } from "@libp2p/ping"
import { tcp } from "@libp2p/tcp"
import { createLibp2p } from "libp2p"
import { corked } from "./CorkedTcp.js"
import * as DialPolicy from "./DialPolicy.js"
import { DialPorts, fromPorts } from "./DialPorts.js"
import { type GateService, gateService, type StreamGuard } from "./Gate.js"
import * as KnownProtocols from "./KnownProtocols.js"
import * as LengthPrefixed from "./LengthPrefixed.js"
import * as NoiseCrypto from "./NoiseCrypto.js"
import * as QuietLogger from "./QuietLogger.js"
import { muxer } from "./Yamux.js"

/** The DHT of the mesh: its own protocol id, so it never mixes with the public IPFS DHT. */
export const DHT_PROTOCOL = "/mesh/kad/1.0.0"

/**
 * How long a router keeps a provider record (kad-dht's default is 48 h), and how often it drops expired ones. Nodes
 * provide their services' keys again every 5 minutes, so a node that went away leaves discovery within about
 * 16 minutes instead of two days.
 */
export const PROVIDER_VALIDITY_MS = 15 * 60 * 1000
const PROVIDER_CLEANUP_MS = 60 * 1000

/** Relayed connections may stay open an hour (as the reference router); data is capped only against abuse. */
const RELAY_DURATION_LIMIT_MS = 60 * 60 * 1000
const RELAY_DATA_LIMIT = 1n << 30n
/** A router holds a slot for every node behind NAT; libp2p's default of 15 suits a public volunteer relay. */
const RELAY_MAX_RESERVATIONS = 4096
/**
 * A node asks for its relay slots on several routers at once (RouterLinks decides how many): libp2p's default of one
 * at a time queued the second router's request behind the first, and a slow first one left the node with no second
 * slot at all. A request gets as long as a relayed dial.
 */
const RELAY_CLIENT = {
  reservationConcurrency: 4,
  reservationCompletionTimeout: DialPolicy.LIBP2P_ADDRESS_DIAL_TIMEOUT_MS,
}

/** libp2p's own dials (relay reservations, the DHT, a dial by peer id) are bounded as the host's (DialPolicy.ts). */
const DIAL_BOUNDS = {
  dialTimeout: DialPolicy.LIBP2P_DIAL_TIMEOUT_MS,
  addressDialTimeout: DialPolicy.LIBP2P_ADDRESS_DIAL_TIMEOUT_MS,
}

/**
 * A router is linked to every member. libp2p's defaults (300 connections; 5 new inbound connections a second per
 * address; 10 pending) would prune members past 300 and, after a restart, turn away all but 5 of the members behind
 * one address (a NAT, or one test host) each second, each then waiting out its backoff. Unauthenticated connections
 * are still cut off by the handshake deadline.
 */
const ROUTER_CONNECTIONS = {
  ...DIAL_BOUNDS,
  maxConnections: 16_384,
  inboundConnectionThreshold: 200,
  maxIncomingPendingConnections: 256,
}

export interface MeshServices extends Record<string, unknown> {
  identify: Identify
  ping: Ping
  dht: KadDHT
  pubsub: GossipSub
  gate: GateService
  autonat: unknown
  /** Routers only. */
  relay?: CircuitRelayService
  /** Nodes only: the local port a hole punch's dial leaves from (DialPorts.ts). */
  dialPorts?: DialPorts
}

export type MeshLibp2p = Libp2p<MeshServices>

export interface HostConfig {
  readonly seed: Uint8Array
  readonly listen: ReadonlyArray<string>
  readonly announce?: ReadonlyArray<string>
  readonly mode: "router" | "node"
  readonly gater: ConnectionGater
  readonly guard: StreamGuard
  /** Protocols this host serves to dialers that propose them optimistically: their echo waits for the answer. */
  readonly optimisticProtocols?: ReadonlyArray<string>
  /** Nodes only: whether a peer is a router (a DHT server); no other peer enters the node's DHT routing table. */
  readonly isDhtServer?: (peerId: string) => boolean
}

/**
 * A node's view of the peers its DHT hears of. kad-dht puts every peer named in an answer (each provider, each closer
 * peer) into the asker's routing table; here those are mostly other nodes, which serve no DHT. Past K of them a
 * query for some keys starts from nodes only and finds nothing although a router holds the record. A peer that is
 * not a router keeps its addresses out of the table (kad-dht skips a peer without addresses). Routers map nothing:
 * their mapper also shapes the providers they name.
 */
const routersOnly =
  (isDhtServer: (peerId: string) => boolean) =>
  (peer: PeerInfo): PeerInfo =>
    isDhtServer(peer.id.toString()) ? peer : { id: peer.id, multiaddrs: [] }

/** Creates the host, not started: the caller attaches its listeners first so that no connection goes unseen. */
export const create = async (config: HostConfig): Promise<MeshLibp2p> => {
  LengthPrefixed.install()
  const router = config.mode === "router"
  const relay = router
    ? {
        relay: circuitRelayServer({
          reservations: {
            maxReservations: RELAY_MAX_RESERVATIONS,
            defaultDurationLimit: RELAY_DURATION_LIMIT_MS,
            defaultDataLimit: RELAY_DATA_LIMIT,
          },
        }),
      }
    : {}
  const dialPorts = new DialPorts()
  const libp2p = await createLibp2p<MeshServices>({
    ...QuietLogger.option(),
    start: false,
    privateKey: await generateKeyPairFromSeed("Ed25519", config.seed),
    addresses: {
      listen: [...config.listen],
      ...(config.announce === undefined ? {} : { announce: [...config.announce] }),
    },
    transports: router ? [corked(tcp())] : [corked(fromPorts(dialPorts)(tcp())), circuitRelayTransport(RELAY_CLIENT)],
    connectionEncrypters: [noise({ crypto: NoiseCrypto.crypto })],
    streamMuxers: [muxer({}, { holdEchoFor: config.optimisticProtocols ?? [] })],
    connectionGater: config.gater,
    connectionManager: router ? ROUTER_CONNECTIONS : DIAL_BOUNDS,
    services: {
      // Identify runs once the handshake admitted the peer (MeshHostLive), not on every connection: it would tell an
      // unauthenticated peer our addresses and protocols, and compete with the handshake for the first milliseconds.
      identify: identify({ runOnConnectionOpen: false }),
      ping: ping(),
      dht: kadDHT({
        protocol: DHT_PROTOCOL,
        clientMode: !router,
        // Every peer the DHT can hear from is authenticated, and a private mesh has private and loopback
        // addresses worth sharing; the default mapper would drop them.
        peerInfoMapper:
          router || config.isDhtServer === undefined ? passthroughMapper : routersOnly(config.isDhtServer),
        // kad-dht expires others' provider records in its reprovider's sweep, not when it answers GET_PROVIDERS.
        ...(router ? { reprovide: { validity: PROVIDER_VALIDITY_MS, interval: PROVIDER_CLEANUP_MS } } : {}),
      }),
      pubsub: gossipsub({
        globalSignaturePolicy: StrictSign,
        // Publishing is fire-and-forget: an empty topic is not an error for the publisher.
        allowPublishToZeroTopicPeers: true,
        // gossipsub scores down every peer of an address shared by more than 10 (a Sybil defence for open networks);
        // past 13 it ignores them all. Here each peer holds a credential from the control plane, and many members
        // behind one NAT (or one host) are normal: the penalty would silence all of them.
        scoreParams: { IPColocationFactorWeight: 0 },
      }),
      // Members learn whether they are reachable at a public listen address: a router dials them back there, and
      // libp2p announces a public address only once that succeeded. Private addresses need no check (and behind a
      // NAT there is nothing else to check: the NAT's address is found by the routers' identify, HolePunchLive).
      // Only authenticated peers may ask (the guard), and a dial-back connection is admitted like any other.
      autonat: autoNATv2(),
      gate: gateService(config.guard),
      ...relay,
      ...(router ? {} : { dialPorts: () => dialPorts }),
    },
  })
  KnownProtocols.install(libp2p)
  return libp2p
}
