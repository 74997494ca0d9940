/**
 * `mesh-control-plane admin policy apply --file <policy.yaml>`: replaces the mesh policy (PUT /policies, protojson).
 * A refusal is shown at the line and column of the file that holds the offending value.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Console, Effect } from "effect"
import { AdminApiError, connect, connection, errorText, request, send } from "../AdminClient.js"
import * as PolicyFile from "./PolicyFile.js"

const file = Options.text("file").pipe(
  Options.withDescription("The policy: a YAML or JSON file with roles and bindings (see examples/policy.yaml)."),
)

/** The server names the protojson path of what it refuses: `invalid policy: bindings[0].members[1]: <reason>`. */
const REFUSAL = /^invalid policy: ([A-Za-z_]+(?:\[\d+\])?(?:\.[A-Za-z_]+(?:\[\d+\])?)*): (.*)$/s

export const apply = Command.make("apply", { ...connection, file }, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const policy = yield* PolicyFile.read(flags.file)
    const answer = yield* send(cp, "PUT", "/policies", { body: JSON.stringify(policy.value) })
    if (answer.status !== 200) {
      const message = errorText(answer)
      const located = REFUSAL.exec(message)
      return yield* new AdminApiError({
        message:
          located === null
            ? `${flags.file}: policy refused: ${message} (${answer.status})`
            : `${policy.locate(located[1] ?? "")}: policy refused: ${located[1]}: ${located[2]}`,
      })
    }
    const current = (yield* request(cp, "GET", "/policies")).json as { readonly version?: string | number }
    yield* Console.log(`policy applied from ${flags.file}: now version ${current.version ?? "?"}`)
  }),
).pipe(Command.withDescription("Replace the mesh policy with a file's; a refusal points at the line of the file."))
