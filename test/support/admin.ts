/** Operator calls a test makes through the control plane's JSON API. */
import { Effect } from "effect"
import type { ControlPlaneHarness } from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"

export interface MintedToken {
  readonly id: string
  readonly token: string
  readonly role: string
  readonly expires_at: string
  readonly max_usages: number
}

export const mintToken = (cp: ControlPlaneHarness, body: Record<string, unknown> = {}) =>
  Effect.flatMap(
    MeshClient.json(cp.url, "POST", "/admin/bootstrap-tokens", cp.adminToken, { role: "mesh:role:node", ...body }),
    (answer) =>
      answer.status === 201
        ? Effect.succeed(answer.json as MintedToken)
        : Effect.dieMessage(`mint failed: ${answer.status} ${JSON.stringify(answer.json)}`),
  )

export const admin = (cp: ControlPlaneHarness, method: string, path: string, body?: unknown) =>
  MeshClient.json(cp.url, method, path, cp.adminToken, body)

/** Replaces the mesh policy with a protojson document. */
export const setPolicy = (cp: ControlPlaneHarness, policy: unknown) =>
  Effect.flatMap(admin(cp, "POST", "/policies", policy), (answer) =>
    answer.status === 200
      ? Effect.void
      : Effect.dieMessage(`policy refused: ${answer.status} ${JSON.stringify(answer.json)}`),
  )
