/** `mesh-control-plane [flags]`: the control plane server, plus its `admin` commands. */
import * as Command from "@effect/cli/Command"
import * as Check from "./Check.js"
import { admin } from "./control-plane/admin.js"
import { check } from "./control-plane/check.js"
import { server } from "./control-plane/flags.js"
import { serve } from "./control-plane/serve.js"

export const controlPlane = Command.make("mesh-control-plane", { ...server, check: Check.flag }, (flags) =>
  flags.check ? check(flags) : serve(flags),
).pipe(
  Command.withDescription("The mesh control plane: admits nodes, mints credentials, holds the policy, tracks routers."),
  Command.withSubcommands([admin]),
)
