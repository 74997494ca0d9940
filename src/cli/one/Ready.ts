/**
 * mesh-one prints its commands once they would work: each node has found, across the mesh, the demo service of the
 * other (publication takes a moment: a probe of the backend, then provider records through the router). It asks the
 * nodes over their local API, as the commands will.
 */
import { Duration, Effect, Schedule } from "effect"
import type { StartedNode } from "./Nodes.js"

const get = (node: StartedNode, token: string, path: string) =>
  Effect.tryPromise(async () => {
    const response = await fetch(`${node.url}${path}`, { headers: { "x-mesh-authentication": `Bearer ${token}` } })
    return response.ok ? ((await response.json()) as unknown) : undefined
  })

const until = (found: Effect.Effect<boolean, unknown>, within: Duration.Duration) =>
  found.pipe(
    Effect.filterOrFail((ok) => ok),
    Effect.retry(Schedule.spaced(Duration.millis(250))),
    Effect.timeout(within),
    Effect.isSuccess,
  )

/** Whether `node` discovers an `type` service named `name` on another peer within `within`. */
export const discovers = (node: StartedNode, token: string, type: string, name: string, within: Duration.Duration) =>
  until(
    Effect.map(
      get(node, token, `/mesh/service/discover?type=${type}&name=${name}&timeout=2s`),
      (rows) => Array.isArray(rows) && rows.length > 0,
    ),
    within,
  )

/** Whether `node`'s `/v1/models` lists `model` within `within`. */
export const lists = (node: StartedNode, token: string, model: string, within: Duration.Duration) =>
  until(
    Effect.map(
      get(node, token, "/v1/models"),
      (list) =>
        (list as { data?: ReadonlyArray<{ id?: unknown }> } | undefined)?.data?.some((m) => m.id === model) === true,
    ),
    within,
  )
