/**
 * `mesh-control-plane admin`: operator commands. `tokens`, `policy`, `approvals`, `nodes` and `status` call the
 * control plane's admin API (`--control-plane`, `--admin-token-path`); `ban` and `unban` act on the database
 * directly, for when the control plane is down.
 */
import * as Command from "@effect/cli/Command"
import { approvals } from "./admin/approvals.js"
import { ban } from "./admin/ban.js"
import { nodes } from "./admin/nodes.js"
import { policy } from "./admin/policy.js"
import { status } from "./admin/status.js"
import { tokens } from "./admin/tokens.js"
import { unban } from "./admin/unban.js"

export const admin = Command.make("admin").pipe(
  Command.withDescription(
    "Operator commands: tokens, policy, approvals, nodes and status through the admin API; ban and unban directly in the database, for when the control plane is down.",
  ),
  Command.withSubcommands([tokens, policy, approvals, nodes, status, ban, unban]),
)
