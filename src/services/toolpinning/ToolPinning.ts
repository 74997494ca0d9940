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

export interface ToolPinningService {
  readonly judge: (provided: Provided, mode?: Mode) => Effect.Effect<Judgement>
  /** The node's mode for a service: `tool_pinning` of its `federate:` entry, else of the node. */
  readonly modeOf: (service: string) => Mode
}

export class ToolPinning extends Context.Tag("mesh/ToolPinning")<ToolPinning, ToolPinningService>() {}
