/**
 * POST /nodes/catalog: NodeCatalogReport in, 204 out; the credential is the bearer, the node's proof of possession
 * in `X-Mesh-Challenge-Ts` and `X-Mesh-Challenge-Sig` (as `GET /enroll/status` takes it).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Either } from "effect"
import * as Challenge from "../../domain/Challenge.js"
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
        const request = yield* HttpServerRequest.HttpServerRequest
        const ts = (request.headers["x-mesh-challenge-ts"] ?? "").trim()
        const signature = Challenge.fromHeader(request.headers["x-mesh-challenge-sig"] ?? "")
        const body = yield* Protobuf.decode(NodeCatalogReportSchema, payload)
        // A missing or malformed proof reads like a wrong one: the check itself names what was wrong.
        yield* catalog.report(
          credential,
          {
            unixMs: /^\d{1,16}$/.test(ts) ? Number(ts) : 0,
            signature: Either.getOrElse(signature, () => new Uint8Array(64)),
          },
          body.services.map((s) => ({ type: typeName(s.type), name: s.name, description: s.description })),
        )
      }),
    )
  }),
)
