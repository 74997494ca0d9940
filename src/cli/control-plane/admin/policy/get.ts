/** `mesh-control-plane admin policy get`: GET /policies, printed as YAML that `policy apply` takes back. */
import * as Command from "@effect/cli/Command"
import { Console, Effect } from "effect"
import { stringify } from "yaml"
import { connect, connection, request } from "../AdminClient.js"
import * as Output from "../Output.js"

interface GetResponse {
  readonly version?: string | number
  readonly updateTime?: string
  readonly policy?: {
    readonly roles?: ReadonlyArray<Record<string, unknown>>
    readonly bindings?: ReadonlyArray<unknown>
  }
}

/** protojson answers in camelCase; the files we document use the proto names. */
const snake = (role: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(role).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]))

export const get = Command.make("get", connection, (flags) =>
  Effect.gen(function* () {
    const cp = yield* connect(flags)
    const answer = (yield* request(cp, "GET", "/policies")).json as GetResponse
    const document = {
      roles: (answer.policy?.roles ?? []).map(snake),
      bindings: answer.policy?.bindings ?? [],
    }
    yield* Output.either(
      cp.json,
      answer,
      Console.log(
        `# mesh policy version ${answer.version ?? 0}${answer.updateTime === undefined ? "" : `, updated ${answer.updateTime}`}\n${stringify(document)}`.trimEnd(),
      ),
    )
  }),
).pipe(Command.withDescription("Print the mesh policy as YAML, ready to edit and give back to `policy apply`."))
