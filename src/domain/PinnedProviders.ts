/**
 * Which providers of one tool may be chosen, by how their definitions are judged (domain/ToolPinning): shadowing is
 * refused. Where any provider's definition is pinned or unpinned (the policy approves it, or it is the one this node
 * pinned first), only those are chosen: a provider of the same name with another definition never is, whatever the
 * mode. Where every provider's definition changed, those the mode lets through (`warn`) are chosen, marked; under
 * `enforce`, none, and the tool is not offered at all.
 */
import type { Judgement } from "./ToolPinning.js"

export const choose = <A>(offers: ReadonlyArray<A>, judgementOf: (offer: A) => Judgement): ReadonlyArray<A> => {
  const matching = offers.filter((offer) => judgementOf(offer).pin !== "changed")
  return matching.length > 0 ? matching : offers.filter((offer) => judgementOf(offer).usable)
}
