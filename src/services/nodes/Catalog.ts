/** What each node reports it publishes: kept for the operator's status view only, never used to authorize. */
import { Context, type Effect } from "effect"
import type { BadRequest, Forbidden, Unauthorized } from "../../domain/Errors.js"

export interface CatalogService {
  readonly type: "mcp" | "inference" | "a2a" | "egress" | "unspecified"
  readonly name: string
  readonly description: string
}

export interface CatalogEntry {
  readonly peerId: string
  readonly services: ReadonlyArray<CatalogService>
  readonly reportedAt: number
}

/** The reporting node's proof of possession: its signature of `mesh:nodes-catalog:<peer_id>:<unix-millis>`. */
export interface CatalogProof {
  readonly unixMs: number
  readonly signature: Uint8Array
}

export interface CatalogServiceApi {
  /**
   * Stores the report of the node whose credential is presented and that signed the proof with its own key: every
   * peer sees a node's credential in the mesh handshake, so the credential alone proves nothing.
   */
  readonly report: (
    credential: Uint8Array,
    proof: CatalogProof,
    services: ReadonlyArray<CatalogService>,
  ) => Effect.Effect<void, BadRequest | Unauthorized | Forbidden>
  readonly all: Effect.Effect<ReadonlyArray<CatalogEntry>>
}

export class Catalog extends Context.Tag("mesh/Catalog")<Catalog, CatalogServiceApi>() {}

/** Reports above this many services are refused. */
export const MAX_SERVICES = 512
