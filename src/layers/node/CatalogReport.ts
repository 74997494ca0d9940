/**
 * Tells the control plane what this node publishes (`POST /nodes/catalog`), right after joining and then every
 * minute, so the operator's console shows it. Display only: nothing authorizes from it, so a failed report is a
 * warning and the next one tries again.
 */
import { create } from "@bufbuild/protobuf"
import { Duration, Effect, Layer, Schedule } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import type { ServiceType as ServiceTypeName } from "../../domain/NodeFile.js"
import { ServiceInfoSchema, ServiceType } from "../../gen/mesh_pb.js"
import { ControlPlaneClient } from "../../services/member/ControlPlaneClient.js"
import { Membership } from "../../services/member/Membership.js"

const EVERY = Duration.minutes(1)

export const wireType: Record<ServiceTypeName, ServiceType> = {
  mcp: ServiceType.MCP,
  inference: ServiceType.INFERENCE,
  a2a: ServiceType.A2A,
}

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const client = yield* ControlPlaneClient
    const membership = yield* Membership
    const settings = yield* NodeConfig
    const services = settings.file.services.map((s) =>
      create(ServiceInfoSchema, { type: wireType[s.type], name: s.name, description: s.description }),
    )
    const report = Effect.flatMap(membership.credential, (credential) =>
      client.reportCatalog(credential, services),
    ).pipe(Effect.catchAll((error) => Effect.logWarning("catalog report failed", error)))
    yield* report.pipe(Effect.repeat(Schedule.spaced(EVERY)), Effect.forkScoped)
  }),
)
