/**
 * Hole punching: a member whose only authenticated connection to another member runs through a router's relay
 * upgrades it to a direct one (`/mesh/punch/1.0.0`, p2p/HolePunch.ts). Which side starts, what each side does with
 * the other's offer, and when a failed attempt is tried again are the pure rules below; the relay stays the path
 * whenever no direct connection can be made (a NAT that maps ports per destination).
 */
import { Context, type Effect, type Option } from "effect"

/** How a connection to a member became direct. */
export type How = "dialled" | "hole_punched"

export interface PunchRecord {
  readonly atMs: number
  readonly result: "direct" | "failed"
  readonly how?: How
  /** Why the last attempt failed, in words for an operator. */
  readonly reason?: string
  /** Failed attempts in a row; reset by a success. */
  readonly failures: number
}

export interface HolePunchService {
  /** This node's public addresses as routers see them (identify's observed address, without the port). */
  readonly observed: Effect.Effect<ReadonlyArray<string>>
  /** The last upgrade attempt with the peer, on either side. */
  readonly record: (peerId: string) => Effect.Effect<Option.Option<PunchRecord>>
}

export class HolePunch extends Context.Tag("mesh/HolePunch")<HolePunch, HolePunchService>() {}

/** One side starts, so two attempts never cross: the lower peer id. */
export const initiates = (self: string, peer: string): boolean => self < peer

/** After a failure: 10 s, 30 s, 2 min, then every 5 min (a NAT's behaviour rarely changes; the relay carries on). */
export const retryDelayMs = (failures: number): number => [10_000, 30_000, 120_000][failures - 1] ?? 300_000

/**
 * What a side does with the two offers: `lan` (both behind one NAT: the initiator dials the peer's listen
 * addresses, since a NAT seldom loops back to itself), `dial` (the peer is reachable where it listens: dial it),
 * `wait` (this side is, the peer dials it), `punch` (both behind NAT: both dial at once from the ports they named).
 */
export type Plan = "lan" | "dial" | "wait" | "punch" | "none"

export interface Sides {
  /** Hosts of this side's public addresses, and whether it listens at one of them. */
  readonly mine: { readonly hosts: ReadonlyArray<string>; readonly listensPublicly: boolean }
  readonly theirs: {
    readonly hosts: ReadonlyArray<string>
    readonly listensPublicly: boolean
  }
  readonly initiator: boolean
}

export const plan = ({ mine, theirs, initiator }: Sides): Plan => {
  if (theirs.hosts.length === 0 || mine.hosts.length === 0) return "none"
  if (theirs.hosts.some((h) => mine.hosts.includes(h))) return initiator ? "lan" : "wait"
  if (theirs.listensPublicly && (!mine.listensPublicly || initiator)) return "dial"
  if (mine.listensPublicly) return "wait"
  return "punch"
}
