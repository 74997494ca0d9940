/**
 * The control plane as routers and nodes call it: protobuf over HTTP, every request that needs it signed with the
 * member's key (proof of possession). Failures are typed: the control plane refused (with its status and error
 * body) or could not be reached.
 */
import type { MessageInitShape } from "@bufbuild/protobuf"
import { Context, Data, type Effect } from "effect"
import type {
  BootstrapEnrollResponse,
  ControlPlaneInfoResponse,
  EnrollResponse,
  NodeToolDriftReportSchema,
  PolicyConfigGetResponse,
  RouterLeaseResponse,
  ServiceInfo,
  TokenRefreshResponse,
} from "../../gen/mesh_pb.js"

export class ControlPlaneRefused extends Data.TaggedError("ControlPlaneRefused")<{
  readonly status: number
  readonly code: string
  readonly reason: string
}> {
  override get message(): string {
    return `control plane refused (${this.status} ${this.code}): ${this.reason}`
  }
}

export class ControlPlaneUnreachable extends Data.TaggedError("ControlPlaneUnreachable")<{ readonly reason: string }> {
  override get message(): string {
    return `control plane unreachable: ${this.reason}`
  }
}

export type ControlPlaneError = ControlPlaneRefused | ControlPlaneUnreachable

export interface Signer {
  readonly peerId: string
  readonly seed: Uint8Array
  readonly publicKey: Uint8Array
}

export interface ControlPlaneClientService {
  readonly url: string
  readonly enroll: (
    signer: Signer,
    request: {
      readonly bootstrapToken: string
      readonly role: string
      readonly labels: Readonly<Record<string, string>>
    },
  ) => Effect.Effect<BootstrapEnrollResponse, ControlPlaneError>
  readonly enrollStatus: (signer: Signer) => Effect.Effect<BootstrapEnrollResponse, ControlPlaneError>
  readonly register: (
    signer: Signer,
    request: { readonly idToken: string; readonly role: string; readonly labels: Readonly<Record<string, string>> },
  ) => Effect.Effect<EnrollResponse, ControlPlaneError>
  readonly refresh: (signer: Signer, credential: Uint8Array) => Effect.Effect<TokenRefreshResponse, ControlPlaneError>
  /** The raw /keys body, for KeySet.verify. */
  readonly keys: Effect.Effect<Uint8Array, ControlPlaneError>
  readonly info: Effect.Effect<ControlPlaneInfoResponse, ControlPlaneError>
  /** GET /policies as an admitted node: the mesh policy the serving side of a node enforces. */
  readonly policies: (credential: Uint8Array) => Effect.Effect<PolicyConfigGetResponse, ControlPlaneError>
  /** POST /nodes/catalog: what this node publishes, for the operator's console (display only). */
  /** `POST /nodes/catalog`, signed with the member's key as well (every peer sees its credential). */
  readonly reportCatalog: (
    signer: Signer,
    credential: Uint8Array,
    services: ReadonlyArray<Pick<ServiceInfo, "type" | "name" | "description">>,
  ) => Effect.Effect<void, ControlPlaneError>
  /**
   * `POST /nodes/tool-drift`: a changed tool definition this node saw, signed with the member's key over the body
   * as well (the operator may approve what it carries).
   */
  readonly reportToolDrift: (
    signer: Signer,
    credential: Uint8Array,
    report: MessageInitShape<typeof NodeToolDriftReportSchema>,
  ) => Effect.Effect<void, ControlPlaneError>
  readonly lease: (
    signer: Signer,
    credential: Uint8Array,
    lease: {
      readonly addresses: ReadonlyArray<string>
      readonly connectedPeers: ReadonlyArray<string>
      readonly dhtSize: number
    },
  ) => Effect.Effect<RouterLeaseResponse, ControlPlaneError>
}

export class ControlPlaneClient extends Context.Tag("mesh/ControlPlaneClient")<
  ControlPlaneClient,
  ControlPlaneClientService
>() {}
