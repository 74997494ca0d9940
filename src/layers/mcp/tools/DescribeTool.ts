/**
 * `describe_remote_tool`: one tool of an MCP service on a peer, with its input and output schemas and how its
 * definition stands (tool pinning), from its service's listing (ToolListings: the held one while fresh by its ttlMs;
 * listed anew when the held one lacks the tool, which may be new). A changed definition that the mode hides is a tool
 * error naming the change: its words are what changed.
 */
import { Duration, Effect, Either, Option } from "effect"
import { z } from "zod"
import * as AgentScope from "../../../domain/AgentScope.js"
import * as ToolName from "../../../domain/ToolName.js"
import * as ToolPinningRules from "../../../domain/ToolPinning.js"
import { CurrentAgent } from "../../../services/agents/CurrentAgent.js"
import { MeshHost } from "../../../services/mesh/MeshHost.js"
import { ToolListings } from "../../../services/toollistings/ToolListings.js"
import * as Judged from "../../toolpinning/Judged.js"
import * as Tool from "../Tool.js"
import * as Peers from "./Peers.js"

const LIST_TIMEOUT = Duration.seconds(10)

export const tool = Tool.make({
  name: "describe_remote_tool",
  title: "Describe a tool on another peer",
  description:
    "The description, input schema and output schema (when it has one) of a tool on another peer, as its MCP " +
    "server lists it, with how its definition stands (pin: pinned, unpinned or changed) and its fingerprint. " +
    "tool_name is namespaced, mcp://<service>/<tool>, as find_remote_tools lists it.",
  input: {
    peer_id: z.string().describe("The peer that serves the tool."),
    tool_name: z.string().describe("The tool, namespaced: mcp://<service>/<tool>."),
  },
  output: {
    peer_id: z.string(),
    tool_name: z.string(),
    description: z.string(),
    input_schema: z.record(z.string(), z.unknown()),
    output_schema: z.record(z.string(), z.unknown()).optional(),
    pin: z.enum(["pinned", "unpinned", "changed"]),
    fingerprint: z.string(),
  },
  annotations: { readOnlyHint: true, openWorldHint: true },
  run: (args) =>
    Effect.gen(function* () {
      const name = ToolName.parse(args.tool_name)
      if (Either.isLeft(name)) return Tool.refused(name.left)
      const refusal = yield* Peers.refusal(args.peer_id)
      if (Option.isSome(refusal)) return Tool.refused(refusal.value)
      const { service, tool } = name.right
      const agent = yield* Effect.serviceOption(CurrentAgent)
      if (Option.isSome(agent)) {
        const decision = AgentScope.toolAllowed(agent.value.scope, service, tool)
        if (decision._tag === "Denied") return Tool.refused(decision.reason)
      }
      const listings = yield* ToolListings
      const held = yield* Effect.either(listings.get(args.peer_id, service, LIST_TIMEOUT))
      // A tool the held listing lacks may have been added since: the service is asked again before saying no.
      const listed =
        Either.isRight(held) && !held.right.fetched && !held.right.tools.some((t) => t.tool.name === tool)
          ? yield* Effect.either(listings.get(args.peer_id, service, LIST_TIMEOUT, { refresh: true }))
          : held
      if (Either.isLeft(listed)) {
        return Tool.refused(`could not list the tools of ${service} on peer ${args.peer_id}: ${listed.left.message}`)
      }
      // Reached, so authenticated: the labels its credential attests now (a policy pin may be per label).
      const peer = yield* (yield* MeshHost).peer(args.peer_id)
      const labels = Option.match(peer, { onNone: () => ({}), onSome: (p) => p.labels })
      const judged = yield* Judged.listing(args.peer_id, labels, service, listed.right.tools, listed.right.fetched)
      const found = judged.find((j) => j.tool.name === tool)
      if (found === undefined) return Tool.refused(`${service} on peer ${args.peer_id} lists no tool named ${tool}`)
      const target = `${ToolName.format(name.right)} on peer ${args.peer_id}`
      if (!found.judgement.usable) return Tool.refused(ToolPinningRules.withheld(target, found.judgement))
      return Tool.ok({
        peer_id: args.peer_id,
        tool_name: ToolName.format(name.right),
        description: found.tool.description ?? "",
        input_schema: found.tool.inputSchema,
        ...(found.tool.outputSchema === undefined ? {} : { output_schema: found.tool.outputSchema }),
        ...Judged.rowOf(found.judgement),
      })
    }),
})
