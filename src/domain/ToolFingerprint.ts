/**
 * A tool's fingerprint: `sha256:<hex>` over its canonical definition, the fields an agent acts on (name, title,
 * description, input and output schemas, annotations) in RFC 8785 canonical JSON. Node, control plane and console
 * compute it with this one function, so a pin written in the policy matches what every node sees. It covers the
 * definition as the provider sent it, hidden characters included (see HiddenText): a change that only adds invisible
 * text is still a change. Pure: no Node built-ins, so the console bundles it.
 */
import { sha256 } from "@noble/hashes/sha2.js"
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js"
import canonicalize from "canonicalize"

export const FIELDS = ["name", "title", "description", "inputSchema", "outputSchema", "annotations"] as const

const PATTERN = /^sha256:[0-9a-f]{64}$/

export type Fingerprint = `sha256:${string}`

export const isFingerprint = (text: string): text is Fingerprint => PATTERN.test(text)

/** The definition's fields that a fingerprint covers, absent ones left out. */
export const definitionOf = (tool: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const field of FIELDS) if (tool[field] !== undefined) out[field] = tool[field]
  return out
}

/** The canonical JSON text the fingerprint is the hash of. */
export const canonicalText = (tool: Readonly<Record<string, unknown>>): string =>
  canonicalize(definitionOf(tool)) as string

export const fingerprint = (tool: Readonly<Record<string, unknown>>): Fingerprint =>
  `sha256:${bytesToHex(sha256(utf8ToBytes(canonicalText(tool))))}`
