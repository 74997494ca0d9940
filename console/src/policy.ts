/** Reading the policy document the API hands back (protojson of PolicyConfig, as `PolicyUpdateJson` describes). */

import { matches } from "../../src/domain/LabelPattern.js"
import type { PolicyUpdateJson } from "../../src/http/policies/PolicyJson.js"

type Role = NonNullable<PolicyUpdateJson["roles"]>[number]

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null

const strings = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []

export const rolesOf = (document: unknown): ReadonlyArray<Role> =>
  isRecord(document) && Array.isArray(document.roles)
    ? document.roles.filter(isRecord).map((r) => ({
        name: typeof r.name === "string" ? r.name : "",
        allowedLabels: strings(r.allowedLabels ?? r.allowed_labels),
      }))
    : []

export interface LabelCheck {
  readonly label: string
  /** The pattern that allows it, if any. */
  readonly allowedBy: string | undefined
}

/** Each label against the `allowed_labels` of `role`, as approval checks them; a role absent allows none. */
export const checkLabels = (
  document: unknown,
  role: string,
  labels: Readonly<Record<string, string>>,
): ReadonlyArray<LabelCheck> => {
  const patterns = rolesOf(document).find((r) => r.name === role)?.allowedLabels ?? []
  return Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => ({ label: `${key}=${value}`, allowedBy: patterns.find((p) => matches(p, key, value)) }))
}

export const allowedLabelsOf = (document: unknown, role: string): ReadonlyArray<string> =>
  rolesOf(document).find((r) => r.name === role)?.allowedLabels ?? []
