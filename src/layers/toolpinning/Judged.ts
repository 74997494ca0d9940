/**
 * A provider's listing judged by tool pinning, as find_remote_tools, describe_remote_tool and federation use it: each
 * tool in the form agents see beside the judgement of its definition as sent. Judging it also holds it as what the
 * provider lists now, for the calls that follow.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import type { Listed } from "../../domain/PeerTools.js"
import type { Judgement } from "../../domain/ToolPinning.js"
import { ToolPinning } from "../../services/toolpinning/ToolPinning.js"

export interface Judged {
  readonly tool: Tool
  readonly judgement: Judgement
}

export const listing = (
  peerId: string,
  labels: Readonly<Record<string, string>>,
  service: string,
  listed: ReadonlyArray<Listed>,
  /**
   * Whether the listing was just asked of the provider, so held as what it lists now; one remembered from earlier
   * (a listing still fresh by its ttl, federation's memory) is judged alone, so it never replaces a newer one.
   */
  fresh = true,
): Effect.Effect<ReadonlyArray<Judged>, never, ToolPinning> =>
  Effect.gen(function* () {
    const pinning = yield* ToolPinning
    const judgements = fresh
      ? yield* pinning.judgeListing(
          peerId,
          labels,
          service,
          listed.map((l) => l.definition),
        )
      : yield* Effect.forEach(listed, (l) => pinning.judge({ peerId, labels, service, definition: l.definition }))
    return listed.map((l, i) => ({ tool: l.tool, judgement: judgements[i] as Judgement }))
  })

/** The row fields every tool listing shows an agent: how its definition is judged. */
export const rowOf = (judgement: Judgement) => ({ pin: judgement.pin, fingerprint: judgement.fingerprint })
