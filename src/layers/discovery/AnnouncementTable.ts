/**
 * The announcements heard from gossip, one entry per (peer, type, service), newest last. Bounded: a peer keeps at
 * most MAX_PER_PEER entries and the table MAX_ENTRIES; past either, the oldest go. Only entries heard in the last
 * FRESH_MS count for lookups.
 */

import type { Announcement } from "../../domain/ServiceAnnouncement.js"
import type { ServiceType } from "../../domain/ServiceType.js"

export const MAX_ENTRIES = 1024
export const MAX_PER_PEER = 16
export const FRESH_MS = 30_000

export interface Entry extends Announcement {
  readonly receivedAtMs: number
}

/** Map order is insertion order: the first entry is the oldest. */
export type Table = ReadonlyMap<string, Entry>

export const empty: Table = new Map()

const keyOf = (peerId: string, type: ServiceType, service: string) => `${peerId}|${type}|${service}`

export const insert = (table: Table, announcement: Announcement, receivedAtMs: number): Table => {
  const next = new Map(table)
  const key = keyOf(announcement.peerId, announcement.type, announcement.service)
  next.delete(key)
  next.set(key, { ...announcement, receivedAtMs })
  const ofPeer: Array<string> = []
  for (const [k, e] of next) if (e.peerId === announcement.peerId) ofPeer.push(k)
  for (const old of ofPeer.slice(0, Math.max(0, ofPeer.length - MAX_PER_PEER))) next.delete(old)
  while (next.size > MAX_ENTRIES) {
    const oldest = next.keys().next()
    if (oldest.done === true) break
    next.delete(oldest.value)
  }
  return next
}

/** Entries of the type heard within FRESH_MS that list `key`, newest first. */
export const fresh = (table: Table, type: ServiceType, key: string, nowMs: number): ReadonlyArray<Entry> =>
  [...table.values()]
    .filter((e) => e.type === type && nowMs - e.receivedAtMs <= FRESH_MS && e.keys.includes(key))
    .reverse()

/** Entries of the named service heard within FRESH_MS, newest first. */
export const ofService = (table: Table, type: ServiceType, service: string, nowMs: number): ReadonlyArray<Entry> =>
  [...table.values()]
    .filter((e) => e.type === type && e.service === service && nowMs - e.receivedAtMs <= FRESH_MS)
    .reverse()

/** Drops entries no lookup would return any more. */
export const prune = (table: Table, nowMs: number): Table =>
  new Map([...table].filter(([, e]) => nowMs - e.receivedAtMs <= FRESH_MS))
