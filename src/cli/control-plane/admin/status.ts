/** `mesh-control-plane admin status`: GET /admin/status, summed up. */
import * as Command from "@effect/cli/Command"
import { Console, Effect } from "effect"
import { connect, connection, request } from "./AdminClient.js"
import * as Output from "./Output.js"

interface StatusView {
  readonly counts: {
    readonly nodes: number
    readonly routers: number
    readonly pending_enrollments: number
    readonly bootstrap_tokens: number
    readonly users: number
  }
  readonly routers: ReadonlyArray<{
    readonly peer_id: string
    readonly addresses: ReadonlyArray<string>
    readonly connected_peers: number
    readonly expires_at: string
  }>
  readonly policy: { readonly version: number; readonly updated_at: string | null }
  readonly signing_keys: ReadonlyArray<{ readonly id: number }>
}

export const status = Command.make("status", connection, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const view = (yield* request(cp, "GET", "/admin/status")).json as StatusView
    yield* Output.either(
      cp.json,
      view,
      Effect.gen(function* () {
        yield* Output.record([
          ["control plane", cp.url],
          ["nodes", String(view.counts.nodes)],
          ["routers", String(view.counts.routers)],
          ["pending approvals", String(view.counts.pending_enrollments)],
          ["bootstrap tokens", String(view.counts.bootstrap_tokens)],
          ["users", String(view.counts.users)],
          [
            "policy version",
            `${view.policy.version}${view.policy.updated_at === null ? "" : ` (${view.policy.updated_at})`}`,
          ],
          ["signing keys", view.signing_keys.map((k) => k.id).join(", ")],
        ])
        yield* Console.log("")
        yield* Output.table(
          ["ROUTER", "PEERS", "LEASE UNTIL", "ADDRESSES"],
          view.routers.map((r) => [r.peer_id, String(r.connected_peers), r.expires_at, r.addresses.join(" ")]),
        )
      }),
    )
  }),
).pipe(Command.withDescription("Sum up the mesh: counts, routers and their leases, the policy version."))
