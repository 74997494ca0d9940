/** `mesh-control-plane admin tokens mint`: POST /admin/bootstrap-tokens; prints the secret, shown only this once. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { connect, connection, json, request } from "../AdminClient.js"
import * as Output from "../Output.js"
import type { TokenView } from "./View.js"

const flags = {
  ...connection,
  role: Options.text("role").pipe(
    Options.withDescription(
      "Role the enrolled peer will hold: mesh:role:node for a node, mesh:role:router for a router.",
    ),
  ),
  ttlHours: Options.integer("ttl-hours").pipe(
    Options.optional,
    Options.withDescription("Hours the token stays usable. Default: the control plane's (24)."),
  ),
  maxUsages: Options.integer("max-usages").pipe(
    Options.optional,
    Options.withDescription("How many enrollments the token allows. Default: 1."),
  ),
  description: Options.text("description").pipe(
    Options.optional,
    Options.withDescription("A note for operators: what or whom the token is for."),
  ),
  autonomousRecovery: Options.boolean("autonomous-recovery").pipe(
    Options.withDescription(
      "Let nodes enrolled with it refresh a credential signed by a retired key on their own. Default: false.",
    ),
  ),
}

export const mint = Command.make("mint", flags, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const body = {
      role: flags.role,
      autonomous_recovery: flags.autonomousRecovery,
      ...Option.match(flags.ttlHours, { onNone: () => ({}), onSome: (ttl_hours) => ({ ttl_hours }) }),
      ...Option.match(flags.maxUsages, { onNone: () => ({}), onSome: (max_usages) => ({ max_usages }) }),
      ...Option.match(flags.description, { onNone: () => ({}), onSome: (description) => ({ description }) }),
    }
    const answer = yield* request(cp, "POST", "/admin/bootstrap-tokens", json(body))
    const token = answer.json as TokenView & { readonly token: string }
    yield* Output.either(
      cp.json,
      token,
      Output.record([
        ["token", `${token.token}   (shown only now: store it)`],
        ["id", token.id],
        ["role", token.role],
        ["max_usages", String(token.max_usages)],
        ["expires_at", token.expires_at],
      ]),
    )
  }),
).pipe(Command.withDescription("Mint a bootstrap token and print it; the control plane never shows it again."))
