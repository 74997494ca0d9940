/**
 * Node labels (`zone=eu-west`): what a node attests about itself, checked against the policy's `allowed_labels`
 * patterns of its roles (`*`, `key=*`, `key=value`).
 */
import { Either } from "effect"
import { isSafeTerm } from "../crypto/Biscuit.js"
import { matches } from "./LabelPattern.js"

const KEY = /^[a-zA-Z0-9_.-]{1,63}$/

/** Refuses malformed labels; values are 1..255 characters without `,` `=` or control characters. */
export const validate = (labels: Readonly<Record<string, string>>): Either.Either<void, string> => {
  for (const [key, value] of Object.entries(labels)) {
    if (!KEY.test(key)) return Either.left(`invalid label key "${key.slice(0, 63)}"`)
    if (value.length === 0 || value.length > 255 || /[,=]/.test(value) || !isSafeTerm(value)) {
      return Either.left(`invalid value for label "${key}"`)
    }
  }
  return Either.void
}

/** Pattern syntax of `allowed_labels`. */
export const isPattern = (pattern: string): boolean => {
  if (pattern === "*") return true
  const eq = pattern.indexOf("=")
  if (eq <= 0) return false
  const key = pattern.slice(0, eq)
  const value = pattern.slice(eq + 1)
  return KEY.test(key) && value.length > 0 && !value.includes("=") && !value.includes(",") && isSafeTerm(value)
}

export { matches } from "./LabelPattern.js"

/** The first label no pattern allows, if any: `key=value`. */
export const firstDisallowed = (
  labels: Readonly<Record<string, string>>,
  patterns: ReadonlyArray<string>,
): string | undefined =>
  Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .find(([key, value]) => !patterns.some((p) => matches(p, key, value)))
    ?.join("=")

/** Parses the `k=v[,k=v]` header form. */
export const parseList = (text: string): Either.Either<Record<string, string>, string> => {
  const out: Record<string, string> = {}
  for (const part of text.split(",")) {
    const trimmed = part.trim()
    if (trimmed.length === 0) continue
    const eq = trimmed.indexOf("=")
    if (eq <= 0) return Either.left(`"${trimmed}" is not key=value`)
    out[trimmed.slice(0, eq).trim()] = trimmed.slice(eq + 1).trim()
  }
  return Either.flatMap(validate(out), () => Either.right(out))
}

/** Whether the attested labels carry at least one of the pairs (`X-Mesh-Required-Labels`). */
export const attestsAny = (
  attested: Readonly<Record<string, string>>,
  required: Readonly<Record<string, string>>,
): boolean => Object.entries(required).some(([key, value]) => attested[key] === value)

/** The pairs the attested labels lack, as `key=value`, sorted (the operator's floor needs every pair). */
export const missing = (
  attested: Readonly<Record<string, string>>,
  required: Readonly<Record<string, string>>,
): ReadonlyArray<string> =>
  Object.entries(required)
    .filter(([key, value]) => attested[key] !== value)
    .map(([key, value]) => `${key}=${value}`)
    .sort()
