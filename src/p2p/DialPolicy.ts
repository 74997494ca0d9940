/**
 * How a mesh host reaches a peer, decided once for the whole host (docs/decisions.md, "Mesh hosts (libp2p)"). Every
 * exchange with a peer (catalog, proxy, MCP, inference, discovery) goes through MeshHost.connect / openStream, which
 * use, in this order:
 *
 * 1. an authenticated connection already open, direct before relayed;
 * 2. a connection to the peer whose handshake is under way (it is waited for, not duplicated);
 * 3. a fresh dial plan: the peer's direct addresses, public ones first (a private address is often another home's,
 *    where the dial stalls until its timeout), one after the other with a short stagger; and the relay of every
 *    connected router, started once the direct attempts had a head start (at once when there is no direct address,
 *    or when the last direct dial of the peer failed).
 *    Each next attempt starts early when every earlier one has failed. The first to authenticate wins; the rest are
 *    cancelled.
 *
 * Whatever made the first connection, a path that is relayed does not stay so when it need not: a member reached
 * only through a relay is dialled at its own addresses, the direct attempts of the same plan (DCUtR's unilateral
 * upgrade), at once beside the hole punch (layers/mesh/HolePunchLive.ts), and step 1 uses the direct connection once
 * it is admitted. On a flat network (one LAN, one VPC, loopback) that dial is what makes the path direct; across NATs
 * the punch does, and a private address of another home costs the upgrade nothing but a dial that times out.
 *
 * libp2p's own dial bounds are set to the same figures, so a dial made by libp2p itself (a relay reservation, the
 * DHT) stalls no longer than one made here.
 */
import { Duration } from "effect"

/** One direct address: long enough for a TCP and noise handshake across the internet, short enough not to stall. */
export const DIRECT_DIAL_TIMEOUT = Duration.seconds(3)
/** One relayed attempt: a hop through a router to the peer and back, and the handshakes over it. */
export const RELAY_DIAL_TIMEOUT = Duration.seconds(8)
/** Between the starts of two attempts of one plan. */
export const STAGGER = Duration.millis(250)
/** How long the direct addresses have before the relays are tried too. */
export const RELAY_HEAD_START = Duration.seconds(1)

/** libp2p's connection manager: a whole dial (every address), and one address of it. */
export const LIBP2P_DIAL_TIMEOUT_MS = Duration.toMillis(RELAY_DIAL_TIMEOUT) + 2_000
export const LIBP2P_ADDRESS_DIAL_TIMEOUT_MS = Duration.toMillis(RELAY_DIAL_TIMEOUT)

export interface Attempt {
  readonly address: string
  readonly relayed: boolean
  /** When it starts, from the start of the plan (earlier if every attempt before it failed). */
  readonly delay: Duration.Duration
  readonly timeout: Duration.Duration
}

/** Private (RFC 1918, shared, loopback, link-local, unique-local) ranges: another network's, as seen from here. */
const PRIVATE_V4 = [
  /^10\./,
  /^172\.(1[6-9]|2\d|3[01])\./,
  /^192\.168\./,
  /^127\./,
  /^169\.254\./,
  /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./,
]
const PRIVATE_V6 = [/^::1$/, /^f[cd]/i, /^fe[89ab]/i]

/** Whether a multiaddr's IP is a public one; names (dns) count as public. */
export const isPublic = (address: string): boolean => {
  const [, family, host = ""] = address.split("/")
  if (family === "ip4") return !PRIVATE_V4.some((range) => range.test(host))
  if (family === "ip6") return !PRIVATE_V6.some((range) => range.test(host))
  return true
}

/**
 * The plan for a peer with `direct` addresses and `relays` (circuit addresses through connected routers).
 * `directFailed`: the last direct dial of this peer failed (its addresses are another home's, or behind a NAT that
 * drops them), so the relays get no head start: holding them back would only delay the path that works, e.g. the
 * other router's relay once the router of a relayed path died.
 */
export const plan = (
  direct: ReadonlyArray<string>,
  relays: ReadonlyArray<string>,
  directFailed = false,
): ReadonlyArray<Attempt> => {
  const ordered = [...direct.filter(isPublic), ...direct.filter((a) => !isPublic(a))]
  const directAttempts = ordered.map(
    (address, i): Attempt => ({
      address,
      relayed: false,
      delay: Duration.times(STAGGER, i),
      timeout: DIRECT_DIAL_TIMEOUT,
    }),
  )
  const relayStart = ordered.length === 0 || directFailed ? Duration.zero : RELAY_HEAD_START
  const relayAttempts = relays.map(
    (address, i): Attempt => ({
      address,
      relayed: true,
      delay: Duration.sum(relayStart, Duration.times(STAGGER, i)),
      timeout: RELAY_DIAL_TIMEOUT,
    }),
  )
  return [...directAttempts, ...relayAttempts]
}
