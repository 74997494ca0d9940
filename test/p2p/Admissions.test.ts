import { describe, expect, it } from "@effect/vitest"
import type { Connection } from "@libp2p/interface"
import { Admissions } from "../../src/p2p/Admissions.js"
import type { AuthenticatedPeer } from "../../src/p2p/Trust.js"

/** Just enough of a connection for the table: its id and the peer at the other end. */
const connection = (id: string, peerId: string) => ({ id, remotePeer: { toString: () => peerId } }) as Connection

const peer = (peerId: string, verifiedAtMs: number): AuthenticatedPeer => ({
  peerId,
  role: "mesh:role:router",
  labels: {},
  expiresAtMs: verifiedAtMs + 60_000,
  keyId: 1,
  credential: new Uint8Array(),
  verifiedAtMs,
})

const sessionOf = (admissions: Admissions, peerId: string) => admissions.get(peerId)?.session

describe("Admissions sessions", () => {
  it("keep a peer's session through re-authentication and a second connection", () => {
    const admissions = new Admissions()
    admissions.admit(admissions.track(connection("c1", "R")), peer("R", 1))
    const first = sessionOf(admissions, "R")
    admissions.refresh(peer("R", 2))
    admissions.admit(admissions.track(connection("c2", "R")), peer("R", 3))
    admissions.untrack(connection("c1", "R"))
    expect(sessionOf(admissions, "R")).toBe(first)
    expect(admissions.get("R")?.verifiedAtMs).toBe(3)
  })

  it("give a peer a new session when it comes back after its last connection closed", () => {
    const admissions = new Admissions()
    admissions.admit(admissions.track(connection("c1", "R")), peer("R", 1))
    const first = sessionOf(admissions, "R")
    admissions.untrack(connection("c1", "R"))
    expect(admissions.get("R")).toBeUndefined()
    admissions.admit(admissions.track(connection("c2", "R")), peer("R", 2))
    expect(sessionOf(admissions, "R")).not.toBe(first)
  })

  it("give a peer a new session after a drop (ban lifted, peer reconnects)", () => {
    const admissions = new Admissions()
    admissions.admit(admissions.track(connection("c1", "R")), peer("R", 1))
    const first = sessionOf(admissions, "R")
    admissions.drop("R", "banned")
    admissions.admit(admissions.track(connection("c2", "R")), peer("R", 2))
    expect(sessionOf(admissions, "R")).not.toBe(first)
  })
})

describe("Admissions connections", () => {
  /** A connection with the status and limits the lookup reads; `limits` marks a relayed one. */
  const link = (id: string, peerId: string, status: "open" | "closed", relayed = false) =>
    ({ ...connection(id, peerId), status, ...(relayed ? { limits: {} } : {}) }) as Connection

  it("lists a peer's open, authenticated connections only, direct ones first", () => {
    const admissions = new Admissions()
    const relayed = link("relayed", "R", "open", true)
    const direct = link("direct", "R", "open")
    admissions.admit(admissions.track(relayed), peer("R", 1))
    admissions.admit(admissions.track(direct), peer("R", 1))
    admissions.track(link("pending", "R", "open"))
    admissions.refuse(admissions.track(link("refused", "R", "open")), "bad credential")
    admissions.admit(admissions.track(link("closed", "R", "closed")), peer("R", 1))
    admissions.admit(admissions.track(link("other", "S", "open")), peer("S", 1))
    expect(admissions.authenticatedConnections("R").map((c) => c.id)).toEqual(["direct", "relayed"])
    expect(admissions.authenticatedConnections("T")).toEqual([])
  })
})
