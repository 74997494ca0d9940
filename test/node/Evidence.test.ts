import { createPublicKey } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { Biscuit, PublicKey, SignatureAlgorithm } from "../../src/platform/biscuit-wasm.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { socket, tcp } from "./support.js"

interface Evidence {
  readonly peer_id: string
  readonly credential: string
  readonly control_plane_public_key: string
  readonly roles: ReadonlyArray<string>
  readonly labels: Record<string, string>
  readonly expires_at: string
}

/** Checks evidence without any of our code: biscuit-wasm verifies the credential under the key the evidence names. */
const independentlyVerified = (evidence: Evidence) => {
  const spki = createPublicKey({
    key: Buffer.from(evidence.control_plane_public_key, "base64"),
    format: "der",
    type: "spki",
  })
  expect(spki.asymmetricKeyType).toBe("ed25519")
  const raw = new Uint8Array(Buffer.from(spki.export({ format: "jwk" }).x ?? "", "base64url"))
  const token = Biscuit.fromBytes(
    Buffer.from(evidence.credential, "base64"),
    PublicKey.fromBytes(raw, SignatureAlgorithm.Ed25519),
  )
  const source = token.getBlockSource(0)
  token.free()
  return source
}

describe("identity evidence", () => {
  it.live("over the socket: this node's and an authenticated peer's, each verifiable on its own; over TCP: 403", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        const router = yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp)
        yield* node.connected
        const peerId = yield* node.peerId

        const own = yield* socket(node, "/mesh/identity")
        expect(own.status).toBe(200)
        expect(own.headers.get("cache-control")).toBe("no-store")
        const evidence = own.json as Evidence
        expect(evidence.peer_id).toBe(peerId)
        expect(evidence.roles).toEqual(["mesh:role:node"])
        expect(Date.parse(evidence.expires_at)).toBeGreaterThan(Date.now())
        const source = independentlyVerified(evidence)
        expect(source).toContain(`node("${peerId}")`)
        expect(source).toContain(`role("mesh:role:node")`)

        const ofRouter = yield* socket(node, `/mesh/peer/${router.peerId}/evidence`)
        expect(ofRouter.status).toBe(200)
        const routerEvidence = ofRouter.json as Evidence & { verified_at: string }
        expect(routerEvidence.roles).toEqual(["mesh:role:router"])
        expect(independentlyVerified(routerEvidence)).toContain(`node("${router.peerId}")`)
        expect(Date.parse(routerEvidence.verified_at)).toBeLessThanOrEqual(Date.now())

        const stranger = PeerKey.generate().peerId
        expect((yield* socket(node, `/mesh/peer/${stranger}/evidence`)).status).toBe(404)
        expect((yield* socket(node, "/mesh/peer/not-a-peer/evidence")).status).toBe(400)

        // Plain TCP never gets evidence, whatever token it carries.
        for (const path of ["/mesh/identity", `/mesh/peer/${router.peerId}/evidence`]) {
          const refused = yield* tcp(node, path)
          expect(refused.status).toBe(403)
          expect((refused.json as { error: string }).error).toBe("strong_transport_required")
        }
      }),
    ),
  )
})
