/**
 * The policy's tool pins: approved definitions, by fingerprint, of `mcp://<service>/<tool>`, optionally only for
 * providers attesting `peer_labels`. Several pins of one tool approve several definitions (a rollout, or providers
 * that differ by label). Pure rules; the policy document holds them (Policy.ts) and every node receives them with it.
 */
import { Either } from "effect"
import * as Labels from "./Labels.js"
import * as ToolFingerprint from "./ToolFingerprint.js"
import * as ToolName from "./ToolName.js"

export interface ToolPin {
  /** `mcp://<service>/<tool>`. */
  readonly tool: string
  readonly fingerprint: string
  /** The provider must attest every pair; empty for any provider. */
  readonly peerLabels: Readonly<Record<string, string>>
}

/** A policy's pins are read on every tool listing; a few thousand cover any mesh. */
export const MAX_PINS = 10_000

const labelsKey = (labels: Readonly<Record<string, string>>): string =>
  Object.entries(labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join(",")

/** The first problem, with its protojson path (`tool_pins[2].fingerprint: ...`). */
export const validate = (pins: ReadonlyArray<ToolPin>): Either.Either<void, string> => {
  if (pins.length > MAX_PINS) return Either.left(`tool_pins: more than ${MAX_PINS} pins`)
  const seen = new Set<string>()
  for (const [i, pin] of pins.entries()) {
    const name = ToolName.parse(pin.tool)
    if (Either.isLeft(name) || pin.tool !== pin.tool.trim()) {
      return Either.left(`tool_pins[${i}].tool: "${pin.tool.slice(0, 300)}" is not mcp://<service>/<tool>`)
    }
    if (!ToolFingerprint.isFingerprint(pin.fingerprint)) {
      return Either.left(
        `tool_pins[${i}].fingerprint: "${pin.fingerprint.slice(0, 80)}" is not sha256:<64 lower-case hex digits> (mesh-node tools fingerprint prints it)`,
      )
    }
    const labels = Labels.validate(pin.peerLabels)
    if (Either.isLeft(labels)) return Either.left(`tool_pins[${i}].peer_labels: ${labels.left}`)
    const key = `${pin.tool}\n${pin.fingerprint}\n${labelsKey(pin.peerLabels)}`
    if (seen.has(key)) return Either.left(`tool_pins[${i}]: the same pin of ${pin.tool} is listed twice`)
    seen.add(key)
  }
  return Either.void
}

export type Verdict =
  /** The policy pins nothing for this tool and provider: the node pins on first use. */
  | { readonly _tag: "Unpinned" }
  | { readonly _tag: "Approved" }
  /** Pinned, and this definition is none of the approved ones. */
  | { readonly _tag: "Changed"; readonly approved: ReadonlyArray<string> }

/** What the policy says of the definition `fingerprint` of `tool` from a provider attesting `labels`. */
export const check = (
  pins: ReadonlyArray<ToolPin>,
  tool: string,
  fingerprint: string,
  labels: Readonly<Record<string, string>>,
): Verdict => {
  const approved = pins
    .filter((p) => p.tool === tool && Object.entries(p.peerLabels).every(([k, v]) => labels[k] === v))
    .map((p) => p.fingerprint)
  if (approved.length === 0) return { _tag: "Unpinned" }
  return approved.includes(fingerprint) ? { _tag: "Approved" } : { _tag: "Changed", approved }
}
