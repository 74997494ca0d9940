/**
 * POST /nodes/catalog: NodeCatalogReport in, 204 out; the credential is the bearer, the node's proof of possession
 * in `X-Mesh-Challenge-Ts` and `X-Mesh-Challenge-Sig` (as `GET /enroll/status` takes it).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { NodeCatalogReportSchema, ServiceType } from "../../gen/mesh_pb.js"
import { Catalog, type CatalogService } from "../../services/nodes/Catalog.js"
import { ControlPlaneApi } from "../Api.js"
import * as Bearer from "../Bearer.js"
import * as NodeProof from "../NodeProof.js"
import * as Protobuf from "../Protobuf.js"

const typeName = (type: ServiceType): CatalogService["type"] =>
  type === ServiceType.MCP
    ? "mcp"
    : type === ServiceType.INFERENCE
      ? "inference"
      : type === ServiceType.A2A
        ? "a2a"
        : type === ServiceType.EGRESS
          ? "egress"
          : "unspecified"

export const CatalogHttpLive = HttpApiBuilder.group(ControlPlaneApi, "catalog", (handlers) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    return handlers.handle("report", ({ payload }) =>
      Effect.gen(function* () {
        const credential = yield* Bearer.credential
        const proof = yield* NodeProof.fromRequest
        const body = yield* Protobuf.decode(NodeCatalogReportSchema, payload)
        yield* catalog.report(
          credential,
          proof,
          body.services.map((s) => ({ type: typeName(s.type), name: s.name, description: s.description })),
        )
      }),
    )
  }),
)
