/**
 * The node's judge of tool definitions from peers (domain/ToolPinning): the policy's pins, the node's own first-use
 * pins (kept in its data folder), the mode per service, and drift noticed, logged and counted once per new definition.
 */
import { Context, type Effect } from "effect"
import type { Judgement, Mode } from "../../domain/ToolPinning.js"

export interface Provided {
  readonly peerId: string
  /** The labels the provider's credential attests. */
  readonly labels: Readonly<Record<string, string>>
  readonly service: string
  /** The definition as the provider listed it, before hidden text is removed: the fingerprint covers it. */
  readonly definition: Readonly<Record<string, unknown>>
}

/** The definition of a tool in the last listing held of its service on a peer, judged now. */
export type Held =
  /** No listing of the service on the peer is held: list it first. */
  | { readonly _tag: "NoListing" }
  /** The last listing does not have the tool. */
  | { readonly _tag: "NotListed" }
  | { readonly _tag: "Judged"; readonly judgement: Judgement }

export interface ToolPinningService {
  readonly judge: (provided: Provided, mode?: Mode) => Effect.Effect<Judgement>
  /**
   * A listing of `service` just received from `peerId`: each definition judged (in order), and the listing held as
   * what the provider lists now, for `held`.
   */
  readonly judgeListing: (
    peerId: string,
    labels: Readonly<Record<string, string>>,
    service: string,
    definitions: ReadonlyArray<Readonly<Record<string, unknown>>>,
  ) => Effect.Effect<ReadonlyArray<Judgement>>
  /** The definition of `tool` that `peerId` last listed for `service`, judged now: the policy may have changed. */
  readonly held: (peerId: string, service: string, tool: string) => Effect.Effect<Held>
  /** Whether a definition of `mcp://<service>/<tool>` is pinned: by the policy, or by this node on first use. */
  readonly pinned: (service: string, tool: string) => Effect.Effect<boolean>
  /** The node's mode for a service: `tool_pinning` of its `federate:` entry, else of the node. */
  readonly modeOf: (service: string) => Mode
}

export class ToolPinning extends Context.Tag("mesh/ToolPinning")<ToolPinning, ToolPinningService>() {}
