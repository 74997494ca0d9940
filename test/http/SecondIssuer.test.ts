/**
 * With several `--issuer`s, an ID token from the second is accepted like one from the first: it registers a node
 * (which keeps refreshing) and authenticates its user on the user API. A token from an issuer not configured is not.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, setPolicy } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const T0 = Date.parse("2026-06-01T00:00:00Z")

describeDatabases("a token from the second --issuer", (db) => {
  it.scoped("registers a node that refreshes, and signs its user in; an unconfigured issuer's does not", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const first = yield* DevOidcIssuer.make()
      const second = yield* DevOidcIssuer.make()
      const unconfigured = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [first.url, second.url] })
      yield* setPolicy(cp, {
        roles: [{ name: "mesh:role:node" }],
        bindings: [{ role: "mesh:role:node", members: [`user:${second.url}|bob`] }],
      })

      const peer = PeerKey.generate()
      const registered = yield* MeshClient.decodeRegister(
        yield* MeshClient.register(cp.url, peer, yield* second.mint({ sub: "bob" })),
      )
      const status = (yield* admin(cp, "GET", "/admin/status")).json as {
        nodes: ReadonlyArray<{ peer_id: string; identity: { issuer: string; subject: string } | null }>
      }
      expect(status.nodes).toEqual([
        expect.objectContaining({ peer_id: peer.peerId, identity: expect.objectContaining({ issuer: second.url }) }),
      ])
      yield* TestClock.adjust(Duration.minutes(1))
      expect((yield* MeshClient.refresh(cp.url, peer, registered.biscuitToken)).status).toBe(200)

      const user = yield* MeshClient.json(cp.url, "GET", "/user/status", yield* second.mint({ sub: "bob" }))
      expect(user.status).toBe(200)

      const stranger = yield* MeshClient.register(cp.url, PeerKey.generate(), yield* unconfigured.mint({ sub: "bob" }))
      expect(stranger.status).toBe(401)
      const strangerUser = yield* MeshClient.json(
        cp.url,
        "GET",
        "/user/status",
        yield* unconfigured.mint({ sub: "bob" }),
      )
      expect(strangerUser.status).toBe(401)
    }),
  )
})
