/** `mesh-control-plane admin policy`: the mesh policy, through the admin API. */
import * as Command from "@effect/cli/Command"
import { apply } from "./policy/apply.js"
import { get } from "./policy/get.js"

export const policy = Command.make("policy").pipe(
  Command.withDescription("The mesh policy through the admin API: print it, or replace it from a YAML or JSON file."),
  Command.withSubcommands([get, apply]),
)
