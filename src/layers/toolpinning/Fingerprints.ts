/**
 * Fingerprints of definitions, computed once per definition object: a listing is judged again at every federation
 * round and every call checks the latest definition held, and canonical JSON and a hash of a large schema cost far
 * more than the judgement itself. Keyed weakly, so a listing dropped takes its fingerprints with it.
 */
import * as ToolFingerprint from "../../domain/ToolFingerprint.js"

const known = new WeakMap<object, ToolFingerprint.Fingerprint>()

export const of = (definition: Readonly<Record<string, unknown>>): ToolFingerprint.Fingerprint => {
  const found = known.get(definition)
  if (found !== undefined) return found
  const computed = ToolFingerprint.fingerprint(definition)
  known.set(definition, computed)
  return computed
}
