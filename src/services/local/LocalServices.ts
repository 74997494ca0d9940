/**
 * The services this node publishes, as configured in `mesh-node.yaml`. Each is probed before it is published (MCP:
 * initialize and list the tools, running the server first when it is a stdio one; inference: list the models; a2a:
 * read the agent card): a service whose backend does not answer is withheld and probed again with backoff, and
 * published once it answers. Published services are
 * probed again now and then so that their keys (tool names, model ids) stay current. The serving side counts the
 * requests it has in flight per service here; announcements carry that count as the service's load.
 */
import { Context, type Effect, type Option, type Scope, type Stream } from "effect"
import type { ServiceSpec } from "../../domain/NodeFile.js"
import type { ServiceType } from "../../domain/ServiceType.js"

export type PublicationState =
  /** The backend answered its last probe: the service is announced and listed in the catalog. */
  | "published"
  /** The backend has not answered yet, or stopped answering: not announced, probed again with backoff. */
  | "withheld"

export interface LocalService {
  readonly type: ServiceType
  readonly name: string
  readonly description: string
  readonly spec: ServiceSpec
  readonly state: PublicationState
  /** Sorted tool names (mcp) or model ids (inference) from the last successful probe; empty for a2a. */
  readonly keys: ReadonlyArray<string>
  /** Why the last probe failed, while withheld. */
  readonly lastError: Option.Option<string>
  /** Requests being served for this service now. */
  readonly inFlight: number
}

export interface LocalServicesService {
  /** Every configured service, in configuration order, with its state. */
  readonly all: Effect.Effect<ReadonlyArray<LocalService>>
  /** The published ones only. */
  readonly published: Effect.Effect<ReadonlyArray<LocalService>>
  /** A configured service by type and name, whatever its state (the serving side decides what a state means). */
  readonly lookup: (type: ServiceType, name: string) => Effect.Effect<Option.Option<LocalService>>
  /** Counts one request in flight for the service until the scope closes. */
  readonly track: (type: ServiceType, name: string) => Effect.Effect<void, never, Scope.Scope>
  /** The published services now, and again each time the set or their keys change. */
  readonly publishedChanges: Stream.Stream<ReadonlyArray<LocalService>>
}

export class LocalServices extends Context.Tag("mesh/LocalServices")<LocalServices, LocalServicesService>() {}
