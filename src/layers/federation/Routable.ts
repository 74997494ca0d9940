/**
 * The providers of a federated tool a call may go to now. The round chose them (PinnedProviders), but a policy pin
 * may have arrived since, or a listing seen elsewhere may show a provider's definition changed: each is judged again
 * on the definition it last listed (cheap: a lookup, the fingerprint kept), and chosen as the round chooses. A
 * provider whose last listing no longer has the tool is left out; one with no listing held keeps the round's word.
 */
import { Effect } from "effect"
import * as PinnedProviders from "../../domain/PinnedProviders.js"
import type { Judgement } from "../../domain/ToolPinning.js"
import type { FederatedTool, Provider } from "../../services/federation/Federation.js"
import { ToolPinning } from "../../services/toolpinning/ToolPinning.js"

export interface Routes {
  readonly providers: ReadonlyArray<Provider>
  /** The chosen providers whose definition changed (the mode only warns): their results are marked. */
  readonly changed: ReadonlyMap<string, Judgement>
}

export const providers = (tool: FederatedTool): Effect.Effect<Routes, never, ToolPinning> =>
  Effect.gen(function* () {
    const pinning = yield* ToolPinning
    const judged: Array<readonly [Provider, Judgement]> = []
    for (const provider of tool.providers) {
      const held = yield* pinning.held(provider.peerId, tool.service, tool.tool)
      if (held._tag === "NotListed") continue
      judged.push([
        provider,
        held._tag === "Judged" ? held.judgement : { pin: "unpinned", fingerprint: "", expected: [], usable: true },
      ])
    }
    const chosen = PinnedProviders.choose(judged, ([, judgement]) => judgement)
    return {
      providers: chosen.map(([provider]) => provider),
      changed: new Map(chosen.filter(([, j]) => j.pin === "changed").map(([provider, j]) => [provider.peerId, j])),
    }
  })
