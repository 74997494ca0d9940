/** Enrolls a router the way mesh-router does: a router-role bootstrap token, auto-approved or approved at once. */
import { Effect } from "effect"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus } from "../../src/gen/mesh_pb.js"
import type { ControlPlaneHarness } from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, mintToken } from "./admin.js"

export const enrollRouter = (cp: ControlPlaneHarness) =>
  Effect.gen(function* () {
    const token = yield* mintToken(cp, { role: "mesh:role:router" })
    const peer = PeerKey.generate()
    let answer = yield* MeshClient.decodeEnroll(yield* MeshClient.enroll(cp.url, peer, token.token))
    if (answer.status === EnrollmentStatus.PENDING) {
      yield* admin(cp, "POST", `/admin/enrollments/${answer.requestId}/approve`)
      answer = yield* MeshClient.decodeEnroll(yield* MeshClient.enrollStatus(cp.url, peer))
    }
    return { peer, credential: answer.biscuitToken }
  })

export const addressOf = (peerId: string, port = 4001) => `/ip4/10.0.0.1/tcp/${port}/p2p/${peerId}`
