/**
 * Why a path to a peer is relayed, for `/debug/connectivity?peer=`: read from what this node knows of the peer (the
 * addresses it announced, the last direct dial that failed), so that an operator can tell a NAT from a firewall.
 */
import { Option } from "effect"
import { isPublic } from "../../p2p/DialPolicy.js"

export type RelayReason =
  /** A direct dial was tried and failed (the detail says where and how). */
  | "direct_dial_failed"
  /** The peer announces only private or loopback addresses: it is behind a NAT and not known to be reachable. */
  | "no_public_address"
  /** The peer announces no address of its own at all. */
  | "no_direct_address"
  /** The peer has a public address, but the relayed connection came first and no direct dial was needed yet. */
  | "not_tried"

export interface RelayedPath {
  /** The router whose relay carries the connection. */
  readonly router: string
  readonly reason: RelayReason
  readonly detail: string
}

/** The router a circuit address runs through (`…/p2p/<router>/p2p-circuit/…`), or "" when it names none. */
export const relayOf = (remoteAddress: string): string => {
  const at = remoteAddress.indexOf("/p2p-circuit")
  if (at < 0) return ""
  const relay = remoteAddress.slice(0, at)
  const id = relay.lastIndexOf("/p2p/")
  return id < 0 ? "" : relay.slice(id + 5)
}

export const whyRelayed = (
  directAddresses: ReadonlyArray<string>,
  lastDirectFailure: Option.Option<string>,
): { readonly reason: RelayReason; readonly detail: string } => {
  if (Option.isSome(lastDirectFailure)) {
    return { reason: "direct_dial_failed", detail: `the last direct dial failed: ${lastDirectFailure.value}` }
  }
  if (directAddresses.length === 0) {
    return { reason: "no_direct_address", detail: "the peer announces no address of its own" }
  }
  if (!directAddresses.some(isPublic)) {
    return {
      reason: "no_public_address",
      detail: `the peer announces only private addresses (${directAddresses.slice(0, 4).join(", ")}): it is behind a NAT`,
    }
  }
  return { reason: "not_tried", detail: "the relayed connection came first; no direct dial was needed yet" }
}
