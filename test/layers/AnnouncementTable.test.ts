import { describe, expect, it } from "@effect/vitest"
import type { Announcement } from "../../src/domain/ServiceAnnouncement.js"
import * as AnnouncementTable from "../../src/layers/discovery/AnnouncementTable.js"

const announce = (peerId: string, service: string, keys: ReadonlyArray<string> = ["k"]): Announcement => ({
  peerId,
  type: "mcp",
  service,
  keys,
  labels: {},
  activeRequests: 0,
  announcedAtMs: 0,
})

describe("the gossip announcement table", () => {
  it("keeps one entry per peer and service, the latest, and at most 16 per peer (the newest)", () => {
    let table = AnnouncementTable.empty
    table = AnnouncementTable.insert(table, { ...announce("p", "s0"), activeRequests: 1 }, 0)
    table = AnnouncementTable.insert(table, { ...announce("p", "s0"), activeRequests: 5 }, 1)
    expect([...table.values()].map((e) => e.activeRequests)).toEqual([5])
    for (let i = 1; i < 20; i++) table = AnnouncementTable.insert(table, announce("p", `s${i}`), 1 + i)
    table = AnnouncementTable.insert(table, announce("q", "s0"), 30)
    const ofP = [...table.values()].filter((e) => e.peerId === "p").map((e) => e.service)
    expect(ofP).toEqual(Array.from({ length: 16 }, (_, i) => `s${i + 4}`))
    expect([...table.values()].some((e) => e.peerId === "q")).toBe(true)
  })

  it("holds at most 1024 entries; the oldest go first", () => {
    let table = AnnouncementTable.empty
    for (let i = 0; i < 1100; i++) table = AnnouncementTable.insert(table, announce(`peer-${i}`, "s"), i)
    expect(table.size).toBe(AnnouncementTable.MAX_ENTRIES)
    const peers = [...table.values()].map((e) => e.peerId)
    expect(peers[0]).toBe("peer-76")
    expect(peers.at(-1)).toBe("peer-1099")
  })

  it("lookups return entries of the type that list the key, heard in the last 30 s, newest first", () => {
    let table = AnnouncementTable.empty
    table = AnnouncementTable.insert(table, announce("old", "s", ["echo"]), 0)
    table = AnnouncementTable.insert(table, announce("a", "s", ["echo", "shout"]), 10_000)
    table = AnnouncementTable.insert(table, announce("b", "s", ["shout"]), 20_000)
    table = AnnouncementTable.insert(table, { ...announce("c", "s", ["echo"]), type: "inference" }, 25_000)
    table = AnnouncementTable.insert(table, announce("d", "s", ["echo"]), 30_000)
    const now = 35_000
    expect(AnnouncementTable.fresh(table, "mcp", "echo", now).map((e) => e.peerId)).toEqual(["d", "a"])
    expect(AnnouncementTable.fresh(table, "mcp", "shout", now).map((e) => e.peerId)).toEqual(["b", "a"])
    expect(AnnouncementTable.fresh(table, "inference", "echo", now).map((e) => e.peerId)).toEqual(["c"])
    expect([...AnnouncementTable.prune(table, now).values()].map((e) => e.peerId)).toEqual(["a", "b", "c", "d"])
  })

  it("the providers of a named service: entries of that type and name, keys or none, heard in the last 30 s", () => {
    let table = AnnouncementTable.empty
    table = AnnouncementTable.insert(table, announce("old", "agent", []), 0)
    table = AnnouncementTable.insert(table, announce("a", "agent", []), 10_000)
    table = AnnouncementTable.insert(table, announce("b", "other", []), 11_000)
    table = AnnouncementTable.insert(table, { ...announce("c", "agent", []), type: "a2a" }, 12_000)
    table = AnnouncementTable.insert(table, announce("d", "agent", ["echo"]), 13_000)
    const peers = (type: "mcp" | "a2a") =>
      AnnouncementTable.ofService(table, type, "agent", 35_000).map((e) => e.peerId)
    expect(peers("mcp")).toEqual(["d", "a"])
    expect(peers("a2a")).toEqual(["c"])
  })
})
