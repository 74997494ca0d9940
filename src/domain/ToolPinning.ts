/**
 * How a node judges a tool definition from a provider (issue: tools an agent can trust). The policy's pins decide
 * where they name the tool for the provider's labels; elsewhere the node's own pin decides, taken on first use: the
 * first definition this node saw of `mcp://<service>/<tool>`, from any provider, so that a second provider of the same
 * name with another definition (shadowing) reads as changed like a rug pull does.
 *
 * - `pinned`: a definition the policy approves;
 * - `unpinned`: the policy names no definition for it, and it is the one this node pinned on first use (or pinning is
 *   off);
 * - `changed`: another definition than the policy approves, or than this node pinned.
 *
 * A mode per service says what `changed` does: `enforce` hides it and refuses calls, `warn` lists and calls it marked
 * and logged, `off` checks nothing. The default is `enforce` (docs/decisions.md).
 */
import type { Mode } from "./ToolPinningMode.js"
import * as ToolPins from "./ToolPins.js"

export { DEFAULT_MODE, MODES, type Mode } from "./ToolPinningMode.js"

export type Pin = "pinned" | "unpinned" | "changed"

export interface Judgement {
  readonly pin: Pin
  readonly fingerprint: string
  /** What the definition was held against, when changed. */
  readonly against?: "policy" | "first_use"
  /** The fingerprints it should have had, when changed. */
  readonly expected: ReadonlyArray<string>
  /** Whether agents may see and call it under the mode. */
  readonly usable: boolean
}

export const judge = (input: {
  readonly mode: Mode
  readonly policyPins: ReadonlyArray<ToolPins.ToolPin>
  /** This node's first-use pin of the tool, if it took one. */
  readonly firstUse: string | undefined
  readonly tool: string
  readonly fingerprint: string
  readonly labels: Readonly<Record<string, string>>
}): Judgement => {
  const { fingerprint, mode } = input
  if (mode === "off") return { pin: "unpinned", fingerprint, expected: [], usable: true }
  const verdict = ToolPins.check(input.policyPins, input.tool, fingerprint, input.labels)
  if (verdict._tag === "Approved") return { pin: "pinned", fingerprint, expected: [], usable: true }
  if (verdict._tag === "Changed") {
    return { pin: "changed", fingerprint, against: "policy", expected: verdict.approved, usable: mode === "warn" }
  }
  if (input.firstUse === undefined || input.firstUse === fingerprint) {
    return { pin: "unpinned", fingerprint, expected: [], usable: true }
  }
  return { pin: "changed", fingerprint, against: "first_use", expected: [input.firstUse], usable: mode === "warn" }
}

const changeOf = (judgement: Judgement): string =>
  `its definition changed (${judgement.fingerprint}, expected ${judgement.expected.join(" or ")}, ${
    judgement.against === "policy" ? "as the mesh policy pins it" : "as this node pinned it on first use"
  }); an operator can approve the new definition in the console`

/** The tool error a refused call carries: what changed, in words an agent and its person can act on. */
export const refusal = (tool: string, judgement: Judgement): string => `${tool} is not called: ${changeOf(judgement)}`

/** The tool error of a description withheld: the same, for `describe_remote_tool`. */
export const withheld = (tool: string, judgement: Judgement): string =>
  `${tool} is not described: ${changeOf(judgement)}`
