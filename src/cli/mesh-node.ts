/**
 * `mesh-node`: the node. `join` enrolls this machine; `run` joins the mesh and serves the agents on it; `agent-token`
 * mints a scoped token for one of them; `tools` prints tool fingerprints for the policy's pins.
 */
import * as Command from "@effect/cli/Command"
import { agentToken } from "./node/agentToken.js"
import { join } from "./node/join.js"
import { run } from "./node/run.js"
import { tools } from "./node/tools.js"

export const meshNode = Command.make("mesh-node").pipe(
  Command.withDescription("A mesh node: joins the mesh and serves the agents on this machine."),
  Command.withSubcommands([join, run, agentToken, tools]),
)
