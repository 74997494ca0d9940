/**
 * Handlers of tool drift: `POST /nodes/tool-drift` (NodeToolDriftReport; the credential as bearer, the node's
 * signature of `mesh:nodes-tool-drift:<peer_id>:<ms>:<sha256 hex of the body>` in `X-Mesh-Challenge-Ts` and
 * `X-Mesh-Challenge-Sig`) and the operator's list, approve and dismiss.
 */
import { createHash } from "node:crypto"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { NodeToolDriftReportSchema } from "../../gen/mesh_pb.js"
import { OPERATOR } from "../../services/operations/Audit.js"
import { type StoredReport, ToolDriftReports } from "../../services/tooldrift/ToolDriftReports.js"
import { ControlPlaneApi } from "../Api.js"
import * as Bearer from "../Bearer.js"
import * as NodeProof from "../NodeProof.js"
import * as Protobuf from "../Protobuf.js"

const time = (ms: number): string => new Date(ms).toISOString()

export const view = (r: StoredReport) => ({
  id: r.id,
  reporter_peer_id: r.reporterPeerId,
  provider_peer_id: r.providerPeerId,
  provider_labels: { ...r.providerLabels },
  tool: r.tool,
  against: r.against,
  old_fingerprint: r.oldFingerprint,
  old_definition: r.oldDefinition ?? null,
  new_fingerprint: r.newFingerprint,
  new_definition: r.newDefinition ?? null,
  status: r.status,
  reports: r.reports,
  first_reported_at: time(r.firstReportedAt),
  last_reported_at: time(r.lastReportedAt),
  resolved_at: r.resolvedAt === undefined ? null : time(r.resolvedAt),
  resolved_by: r.resolvedBy ?? null,
  approved_for: r.approvedFor === undefined ? null : { ...r.approvedFor },
})

export const ToolDriftHttpLive = HttpApiBuilder.group(ControlPlaneApi, "toolDrift", (handlers) =>
  Effect.gen(function* () {
    const reports = yield* ToolDriftReports
    return handlers.handle("report", ({ payload }) =>
      Effect.gen(function* () {
        const credential = yield* Bearer.credential
        const proof = yield* NodeProof.fromRequest
        const body = yield* Protobuf.decode(NodeToolDriftReportSchema, payload)
        yield* reports.report(
          credential,
          { ...proof, bodyDigest: createHash("sha256").update(payload).digest("hex") },
          {
            providerPeerId: body.providerPeerId,
            providerLabels: { ...body.providerLabels },
            tool: body.tool,
            against: body.against as "policy",
            oldFingerprint: body.oldFingerprint,
            oldDefinition: body.oldDefinition,
            newFingerprint: body.newFingerprint,
            newDefinition: body.newDefinition,
          },
        )
      }),
    )
  }),
)

export const AdminToolDriftHttpLive = HttpApiBuilder.group(ControlPlaneApi, "adminToolDrift", (handlers) =>
  Effect.gen(function* () {
    const reports = yield* ToolDriftReports
    return handlers
      .handle("list", ({ urlParams }) => Effect.map(reports.list(urlParams.status ?? "open"), (rows) => rows.map(view)))
      .handle("approve", ({ path, payload }) =>
        Effect.map(
          reports.approve(path.id, { forProviderLabels: payload.for_provider_labels === true }, OPERATOR),
          (approval) => ({ report: view(approval.report), policy_version: approval.policyVersion }),
        ),
      )
      .handle("dismiss", ({ path }) => Effect.map(reports.dismiss(path.id, OPERATOR), view))
  }),
)
