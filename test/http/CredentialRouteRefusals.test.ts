/**
 * The routes a mesh component calls with its credential as bearer, `POST /nodes/catalog` and `GET /policies`, refuse
 * a request without a credential (401), with a credential that does not verify here (401: not base64, not a
 * credential, signed by another control plane), and with the credential of a banned node (403). A catalog report
 * also needs the node's proof of possession, as `/refresh` does: every peer sees a node's credential in the mesh
 * handshake. A refused catalog report is not stored; a refused policy read carries no policy.
 */
import { expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import { NodeCatalogReportSchema, ServiceType } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"
import { enrollDirectly } from "../support/nodes.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")
const services = [{ type: ServiceType.MCP, name: "files", description: "file tools" }]

/** A call with this `Authorization`; `signer` is the node whose credential it carries, when it is one of ours. */
type Call = (authorization: string | undefined, signer?: MeshClient.Peer) => Effect.Effect<MeshClient.Answer>

const headers = (authorization: string | undefined): Record<string, string> =>
  authorization === undefined ? {} : { authorization }

const reportCatalog =
  (cp: Harness.ControlPlaneHarness): Call =>
  (authorization, signer) =>
    Effect.flatMap(
      signer === undefined ? Effect.succeed(undefined) : MeshClient.challenge(signer, "nodes-catalog"),
      (proof) =>
        MeshClient.postProto(
          `${cp.url}/nodes/catalog`,
          NodeCatalogReportSchema,
          { services },
          {
            ...headers(authorization),
            ...(proof === undefined ? {} : MeshClient.challengeHeaders(proof)),
          },
        ),
    )

const readPolicies =
  (cp: Harness.ControlPlaneHarness): Call =>
  (authorization) =>
    MeshClient.request(`${cp.url}/policies`, { headers: { accept: "application/json", ...headers(authorization) } })

const catalogOf = (cp: Harness.ControlPlaneHarness) =>
  Effect.map(admin(cp, "GET", "/admin/status"), (a) => (a.json as { catalog: ReadonlyArray<unknown> }).catalog)

/** Every refusal, then the same call with a good credential, so the refusals are measured against a working route. */
const refusals = (cp: Harness.ControlPlaneHarness, call: Call, success: number) =>
  Effect.gen(function* () {
    const elsewhere = yield* Harness.make()
    const foreign = yield* enrollDirectly(elsewhere)
    const banned = yield* enrollDirectly(cp, { banned: true })
    const good = yield* enrollDirectly(cp)
    const outcome = (answer: MeshClient.Answer) => [answer.status, MeshClient.errorOf(answer).error]

    expect(outcome(yield* call(undefined))).toEqual([401, "unauthorized"])
    expect(outcome(yield* call("Bearer"))).toEqual([401, "unauthorized"])
    expect(outcome(yield* call("Bearer %%%not-base64%%%"))).toEqual([401, "unauthorized"])
    expect(outcome(yield* call(`Bearer ${Buffer.from("not a credential").toString("base64")}`))).toEqual([
      401,
      "unauthorized",
    ])
    expect(outcome(yield* call(`Bearer ${Biscuit.toText(foreign.credential)}`))).toEqual([401, "unauthorized"])
    const refused = yield* call(`Bearer ${Biscuit.toText(banned.credential)}`, banned.peer)
    expect([refused.status, MeshClient.errorOf(refused)]).toEqual([
      403,
      { error: "forbidden", message: "node is not admitted" },
    ])
    expect((yield* call(`Bearer ${Biscuit.toText(good.credential)}`, good.peer)).status).toBe(success)
    return good
  })

describeDatabases("routes called with a node's credential", (db) => {
  it.scoped("POST /nodes/catalog refuses a missing, bad or banned node's credential and stores nothing", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const call = reportCatalog(cp)
      const good = yield* refusals(cp, call, 204)
      // Only the good report was stored.
      expect(yield* catalogOf(cp)).toEqual([
        {
          peer_id: good.peer.peerId,
          services: [{ type: "mcp", name: "files", description: "file tools" }],
          reported_at: new Date(T0).toISOString(),
        },
      ])
    }),
  )

  it.scoped("POST /nodes/catalog needs the node's own signature: a credential seen in a handshake forges nothing", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const victim = yield* enrollDirectly(cp)
      const thief = yield* enrollDirectly(cp)
      const forged = [{ type: ServiceType.MCP, name: "forged", description: "not the victim's" }]
      const outcome = (answer: MeshClient.Answer) => [answer.status, MeshClient.errorOf(answer)]
      const post = (options: Parameters<typeof MeshClient.reportCatalog>[4]) =>
        Effect.map(MeshClient.reportCatalog(cp.url, victim.peer, victim.credential, forged, options), outcome)
      expect(yield* post({ unsigned: true })).toEqual([
        401,
        { error: "unauthorized", message: "missing or invalid challenge timestamp" },
      ])
      expect(yield* post({ signAs: thief.peer.seed })).toEqual([
        401,
        { error: "unauthorized", message: "challenge signature verification failed" },
      ])
      expect(yield* post({ atMs: T0 - 10 * 60_000 })).toEqual([
        401,
        { error: "unauthorized", message: "stale or invalid challenge timestamp" },
      ])
      expect(yield* catalogOf(cp)).toEqual([])
      // The victim's own report, signed with its key, is what the status shows.
      const own = yield* MeshClient.reportCatalog(cp.url, victim.peer, victim.credential, services)
      expect(own.status).toBe(204)
      expect(yield* catalogOf(cp)).toEqual([
        {
          peer_id: victim.peer.peerId,
          services: [{ type: "mcp", name: "files", description: "file tools" }],
          reported_at: new Date(T0).toISOString(),
        },
      ])
    }),
  )

  it.scoped("GET /policies refuses a missing, bad or banned node's credential and shows no policy", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const cp = yield* Harness.make({ database: yield* db.fresh })
      yield* setPolicy(cp, { roles: [{ name: "mesh:role:node", allowedLabels: ["secret-zone=*"] }] })
      const seen: Array<string> = []
      const call: Call = (authorization) =>
        Effect.tap(readPolicies(cp)(authorization), (answer) => {
          if (answer.status !== 200) seen.push(new TextDecoder().decode(answer.body))
        })
      yield* refusals(cp, call, 200)
      expect(seen).toHaveLength(6)
      for (const body of seen) expect(body).not.toContain("secret-zone")
    }),
  )
})
