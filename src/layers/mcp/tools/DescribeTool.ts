/**
 * `describe_remote_tool`: one tool of an MCP service on a peer, with its input and output schemas, from its service's
 * listing (ToolListings: the held one while fresh by its ttlMs; listed anew when the held one lacks the tool, which
 * may be new).
 */
import { Duration, Effect, Either, Option } from "effect"
import { z } from "zod"
import * as AgentScope from "../../../domain/AgentScope.js"
import * as ToolName from "../../../domain/ToolName.js"
import { CurrentAgent } from "../../../services/agents/CurrentAgent.js"
import { ToolListings } from "../../../services/toollistings/ToolListings.js"
import * as Tool from "../Tool.js"
import * as Peers from "./Peers.js"

const LIST_TIMEOUT = Duration.seconds(10)

export const tool = Tool.make({
  name: "describe_remote_tool",
  title: "Describe a tool on another peer",
  description:
    "The description, input schema and output schema (when it has one) of a tool on another peer, as its MCP " +
    "server lists it. tool_name is namespaced, mcp://<service>/<tool>, as find_remote_tools lists it.",
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
        Either.isRight(held) && !held.right.fetched && !held.right.tools.some((t) => t.name === tool)
          ? yield* Effect.either(listings.get(args.peer_id, service, LIST_TIMEOUT, { refresh: true }))
          : held
      if (Either.isLeft(listed)) {
        return Tool.refused(`could not list the tools of ${service} on peer ${args.peer_id}: ${listed.left.message}`)
      }
      const found = listed.right.tools.find((t) => t.name === tool)
      if (found === undefined) return Tool.refused(`${service} on peer ${args.peer_id} lists no tool named ${tool}`)
      return Tool.ok({
        peer_id: args.peer_id,
        tool_name: ToolName.format(name.right),
        description: found.description ?? "",
        input_schema: found.inputSchema,
        ...(found.outputSchema === undefined ? {} : { output_schema: found.outputSchema }),
      })
    }),
})
