/**
 * What each provider listed last, per (peer, service): its definitions by tool name, with the labels its credential
 * attested then. A call checks the definition it is about to reach against it (a call carries no definition), and a
 * federation round notices that a listing it remembers is older than one seen since (find_remote_tools,
 * describe_remote_tool). Pure; held in a Ref by ToolPinningLive. Bounded: past MAX_SERVICES, the longest-unlisted
 * service is forgotten (a call to it lists it again).
 */
import type { Provided } from "../../services/toolpinning/ToolPinning.js"

export const MAX_SERVICES = 4096

export type Latest = ReadonlyMap<string, ReadonlyMap<string, Provided>>

export const empty: Latest = new Map()

const keyOf = (peerId: string, service: string) => `${peerId}\n${service}`

/** The listing of `service` on `peerId` replaces what was held for it. */
export const replace = (latest: Latest, peerId: string, service: string, listing: ReadonlyArray<Provided>): Latest => {
  const next = new Map(latest)
  const key = keyOf(peerId, service)
  // Deleted first, so the insertion order is the order of listing and the oldest goes first.
  next.delete(key)
  next.set(key, new Map(listing.map((p) => [typeof p.definition.name === "string" ? p.definition.name : "", p])))
  while (next.size > MAX_SERVICES) {
    const oldest = next.keys().next().value
    if (oldest === undefined) break
    next.delete(oldest)
  }
  return next
}

export type Found =
  /** No listing of the service on the peer is held. */
  | { readonly _tag: "NoListing" }
  /** The last listing held does not have the tool. */
  | { readonly _tag: "NotListed" }
  | { readonly _tag: "Listed"; readonly provided: Provided }

export const find = (latest: Latest, peerId: string, service: string, tool: string): Found => {
  const listing = latest.get(keyOf(peerId, service))
  if (listing === undefined) return { _tag: "NoListing" }
  const provided = listing.get(tool)
  return provided === undefined ? { _tag: "NotListed" } : { _tag: "Listed", provided }
}
