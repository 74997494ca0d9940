/** `mesh-node tools`: commands about tool definitions, for operators writing the policy's tool pins. */
import * as Command from "@effect/cli/Command"
import { fingerprint } from "./tools/fingerprint.js"

export const tools = Command.make("tools").pipe(
  Command.withDescription("Tool definitions: their fingerprints, as the policy's tool pins hold them."),
  Command.withSubcommands([fingerprint]),
)
