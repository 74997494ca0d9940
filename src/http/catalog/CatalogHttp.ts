/** POST /nodes/catalog: NodeCatalogReport in, 204 out; the credential is the bearer. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { NodeCatalogReportSchema, ServiceType } from "../../gen/mesh_pb.js"
import { Catalog, type CatalogService } from "../../services/nodes/Catalog.js"
import { ControlPlaneApi } from "../Api.js"
import * as Bearer from "../Bearer.js"
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
        const body = yield* Protobuf.decode(NodeCatalogReportSchema, payload)
        yield* catalog.report(
          credential,
          body.services.map((s) => ({ type: typeName(s.type), name: s.name, description: s.description })),
        )
      }),
    )
  }),
)
