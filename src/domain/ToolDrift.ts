/**
 * A tool drift report: what a node tells the control plane when a provider's definition of a tool differs from the
 * one the node held it against (the policy's pin or its own first-use pin), so an operator can compare the two and
 * approve the new one or ban the member. The definitions are peer text: capped, checked against their fingerprints,
 * shown to the operator, never logged. Pure rules shared by the node (what it sends) and the control plane (what it
 * takes).
 */
import { Either } from "effect"
import * as Labels from "./Labels.js"
import * as PeerKey from "./PeerKey.js"
import * as ToolFingerprint from "./ToolFingerprint.js"
import * as ToolName from "./ToolName.js"

/**
 * A definition's canonical text above this many bytes is not sent (the fingerprint still is): PeerTools lets an input
 * and an output schema of 64 KiB each through, which no operator reads in a diff, and a report stays small.
 */
export const MAX_DEFINITION_BYTES = 64 * 1024

/** A credential attests a handful of labels; a report claiming more is not a node's. */
export const MAX_LABELS = 64

export const AGAINST = ["policy", "first_use"] as const
export type Against = (typeof AGAINST)[number]

export interface Report {
  readonly providerPeerId: string
  readonly providerLabels: Readonly<Record<string, string>>
  /** `mcp://<service>/<tool>`. */
  readonly tool: string
  readonly against: Against
  readonly oldFingerprint: string
  /** Canonical JSON of the fingerprinted fields; empty when the reporting node holds none (or it was too large). */
  readonly oldDefinition: string
  readonly newFingerprint: string
  readonly newDefinition: string
}

const bytes = (text: string): number => new TextEncoder().encode(text).length

/** The canonical text of a definition as a report carries it: empty past the cap. */
export const definitionText = (definition: Readonly<Record<string, unknown>>): string => {
  const text = ToolFingerprint.canonicalText(definition)
  return bytes(text) <= MAX_DEFINITION_BYTES ? text : ""
}

export type Problem =
  | { readonly _tag: "TooLarge"; readonly message: string }
  | { readonly _tag: "Invalid"; readonly message: string }

const invalid = (message: string): Either.Either<never, Problem> => Either.left({ _tag: "Invalid", message })

/** A definition text matches its fingerprint and names the reported tool. */
const checkDefinition = (
  field: "old_definition" | "new_definition",
  text: string,
  fingerprint: string,
  tool: string,
): Either.Either<void, Problem> => {
  if (text === "") return Either.void
  if (bytes(text) > MAX_DEFINITION_BYTES) {
    return Either.left({ _tag: "TooLarge", message: `${field}: more than ${MAX_DEFINITION_BYTES} bytes` })
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return invalid(`${field}: not JSON`)
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return invalid(`${field}: not a JSON object`)
  }
  const definition = parsed as Record<string, unknown>
  if (ToolFingerprint.fingerprint(definition) !== fingerprint) {
    return invalid(`${field}: does not match its fingerprint`)
  }
  if (definition.name !== tool) return invalid(`${field}: names another tool`)
  return Either.void
}

/** Checks a report as decoded from the wire; the first problem, named by its field. */
export const validate = (report: Report): Either.Either<Report, Problem> => {
  const provider = PeerKey.canonicalPeerId(report.providerPeerId)
  if (Either.isLeft(provider) || provider.right !== report.providerPeerId) {
    return invalid("provider_peer_id: not a peer id")
  }
  if (Object.keys(report.providerLabels).length > MAX_LABELS) return invalid(`provider_labels: more than ${MAX_LABELS}`)
  const labels = Labels.validate(report.providerLabels)
  if (Either.isLeft(labels)) return invalid(`provider_labels: ${labels.left}`)
  const name = ToolName.parse(report.tool)
  if (Either.isLeft(name) || ToolName.format(name.right) !== report.tool) {
    return invalid("tool: not mcp://<service>/<tool>")
  }
  if (!(AGAINST as ReadonlyArray<string>).includes(report.against)) return invalid("against: not policy or first_use")
  if (!ToolFingerprint.isFingerprint(report.oldFingerprint)) return invalid("old_fingerprint: not sha256:<hex>")
  if (!ToolFingerprint.isFingerprint(report.newFingerprint)) return invalid("new_fingerprint: not sha256:<hex>")
  if (report.oldFingerprint === report.newFingerprint) return invalid("new_fingerprint: the same as old_fingerprint")
  const old = checkDefinition("old_definition", report.oldDefinition, report.oldFingerprint, name.right.tool)
  if (Either.isLeft(old)) return Either.left(old.left)
  const next = checkDefinition("new_definition", report.newDefinition, report.newFingerprint, name.right.tool)
  if (Either.isLeft(next)) return Either.left(next.left)
  return Either.right(report)
}
