/** Handlers of the operator's overview and audit log. */

import { toJson } from "@bufbuild/protobuf"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Clock, Effect } from "effect"
import { PolicyConfigSchema } from "../../gen/mesh_pb.js"
import { BootstrapTokens } from "../../services/enrollment/BootstrapTokens.js"
import { EnrollmentRequests } from "../../services/enrollment/EnrollmentRequests.js"
import { Users } from "../../services/enrollment/Users.js"
import { KeyRing } from "../../services/identity/KeyRing.js"
import { Bans } from "../../services/nodes/Bans.js"
import { Catalog } from "../../services/nodes/Catalog.js"
import { Nodes } from "../../services/nodes/Nodes.js"
import { Audit } from "../../services/operations/Audit.js"
import { Policy } from "../../services/policy/Policy.js"
import { Leases } from "../../services/routers/Leases.js"
import { ControlPlaneApi } from "../Api.js"
import { fromDocument } from "../policies/PolicyCodec.js"
import * as Views from "../Views.js"
import { tokenView } from "./AdminHttp.js"
import { STATUS_LIST_LIMIT } from "./StatusApi.js"

const time = (ms: number) => new Date(ms).toISOString()

export const AdminStatusHttpLive = HttpApiBuilder.group(ControlPlaneApi, "adminStatus", (handlers) =>
  Effect.gen(function* () {
    const nodes = yield* Nodes
    const leases = yield* Leases
    const requests = yield* EnrollmentRequests
    const tokens = yield* BootstrapTokens
    const users = yield* Users
    const policy = yield* Policy
    const catalog = yield* Catalog
    const keyRing = yield* KeyRing
    const bans = yield* Bans
    const audit = yield* Audit

    return handlers
      .handle("status", () =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const [allNodes, live, pending, allTokens, allUsers, snapshot, reports, keys] = yield* Effect.all([
            nodes.list(),
            leases.live,
            requests.list("pending"),
            tokens.list(),
            users.list,
            policy.current,
            catalog.all,
            keyRing.snapshot,
          ])
          return {
            counts: {
              nodes: allNodes.length,
              routers: live.length,
              pending_enrollments: pending.length,
              bootstrap_tokens: allTokens.length,
              users: allUsers.length,
            },
            routers: live.map((l) => ({
              peer_id: l.peerId,
              addresses: [...l.addresses],
              connected_peers: l.connectedPeers.length,
              dht_size: l.dhtSize,
              renewed_at: time(l.renewedAt),
              expires_at: time(l.expiresAt),
            })),
            nodes: allNodes.slice(0, STATUS_LIST_LIMIT).map((n) => Views.node(n, now)),
            enrollment_requests: pending.slice(0, STATUS_LIST_LIMIT).map(Views.enrollmentRequest),
            bootstrap_tokens: yield* Effect.forEach(allTokens.slice(0, STATUS_LIST_LIMIT), (t) => tokenView(bans, t)),
            users: allUsers.slice(0, STATUS_LIST_LIMIT).map((u) => ({
              id: u.id,
              email: u.email ?? null,
              first_seen_at: time(u.firstSeenAt),
              last_seen_at: time(u.lastSeenAt),
            })),
            policy: {
              version: snapshot.version,
              updated_at: snapshot.updatedAt === undefined ? null : time(snapshot.updatedAt),
              document: toJson(PolicyConfigSchema, fromDocument(snapshot.document)),
            },
            catalog: reports.map((r) => ({
              peer_id: r.peerId,
              reported_at: time(r.reportedAt),
              services: [...r.services],
            })),
            signing_keys: keys.live.map((k) => ({
              id: k.id,
              created_at: time(k.createdAt),
              retires_at: k.expiresAt === undefined ? null : time(k.expiresAt),
            })),
          }
        }),
      )
      .handle("audit", ({ urlParams }) =>
        Effect.map(
          audit.page({
            limit: urlParams.limit ?? 100,
            ...(urlParams.before === undefined ? {} : { before: urlParams.before }),
            ...(urlParams.actor === undefined ? {} : { actor: urlParams.actor }),
            ...(urlParams.action === undefined ? {} : { action: urlParams.action }),
          }),
          (page) => ({
            entries: page.entries.map((e) => ({ ...e, at: time(e.at), details: { ...e.details } })),
            next: page.next ?? null,
          }),
        ),
      )
  }),
)
