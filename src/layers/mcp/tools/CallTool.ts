/**
 * `call_remote_tool`: calls a tool of an MCP service on a peer and returns its result as the server sent it: the same
 * content, and the rest of the result as structured content. Refusals are tool errors naming why: labels the peer does not
 * attest, the operator's egress floor, the serving peer's policy. A peer that cannot be reached is tried again
 * (ATTEMPTS in all, 1 s then 2 s apart); an error the tool itself returns is passed on as it is, never retried.
 * Tool pinning is checked first (PinCheck): a changed definition is refused under `enforce` with what changed, and
 * called and marked (`_meta["mesh/tool_pin"]`) under `warn`.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Clock, Duration, Effect, Either, Option, Schedule } from "effect"
import { z } from "zod"
import * as AgentScope from "../../../domain/AgentScope.js"
import * as InputRequired from "../../../domain/InputRequired.js"
import * as Labels from "../../../domain/Labels.js"
import * as ToolName from "../../../domain/ToolName.js"
import { CurrentAgent } from "../../../services/agents/CurrentAgent.js"
import { isInputRequired, type PeerMcp, type PeerMcpError, type RemoteResult } from "../../../services/mcp/PeerMcp.js"
import type { MeshHost } from "../../../services/mesh/MeshHost.js"
import * as AgentCalls from "../../agents/AgentCalls.js"
import * as InputRequiredView from "../InputRequiredView.js"
import * as PinCheck from "../PinCheck.js"
import * as RemoteCall from "../RemoteCall.js"
import * as Tool from "../Tool.js"
import * as Peers from "./Peers.js"

const ATTEMPTS = 3
const RETRY = Schedule.exponential(Duration.seconds(1)).pipe(Schedule.intersect(Schedule.recurs(ATTEMPTS - 1)))
/**
 * The remote result unchanged: its content as ours, the rest of it (structured content, `isError`, `_meta`) as
 * structured content. The content is carried once: copied into the structured content too, a large answer reached
 * the agent twice over.
 */
const passOn = (result: CallToolResult): CallToolResult => {
  const { content, ...rest } = result
  return { ...result, content, structuredContent: rest }
}

/** The pin check's verdict, and the remote result when the call went. */
interface Attempt {
  readonly pin: PinCheck.Checked
  readonly result?: RemoteResult
}

export const tool = Tool.make({
  name: "call_remote_tool",
  title: "Call a tool on another peer",
  description:
    "Calls a tool of an MCP service on another peer and returns the tool's result unchanged. tool_name is " +
    "namespaced, mcp://<service>/<tool>; arguments must match the tool's input schema (see describe_remote_tool). " +
    "required_labels (key=value[,key=value]) refuses the call unless the peer's credential attests at least one " +
    "pair. A refusal (labels, the serving peer's policy) comes back as an error result that says why. A tool that " +
    "needs input first answers with resultType input_required: answer its inputRequests and call again with " +
    "input_responses and request_state.",
  input: {
    peer_id: z.string().describe("The peer that serves the tool."),
    tool_name: z.string().describe("The tool, namespaced: mcp://<service>/<tool>."),
    arguments: z.record(z.string(), z.unknown()).optional().describe("The tool's arguments."),
    required_labels: z
      .string()
      .optional()
      .describe("key=value[,key=value]: call only if the peer attests at least one of these labels."),
    input_responses: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("Answers to an input_required result's inputRequests, by their keys (on the retry)."),
    request_state: z.string().optional().describe("The request_state of the input_required result answered."),
  },
  output: {
    structuredContent: z.record(z.string(), z.unknown()).optional(),
    resultType: z.string().optional(),
    inputRequests: z.record(z.string(), z.unknown()).optional(),
    requestState: z.string().optional(),
    peer_id: z.string().optional(),
    tool_name: z.string().optional(),
    isError: z.boolean().optional(),
    _meta: z.record(z.string(), z.unknown()).optional(),
  },
  annotations: { openWorldHint: true },
  run: (args, request) =>
    Effect.gen(function* () {
      const name = ToolName.parse(args.tool_name)
      if (Either.isLeft(name)) return Tool.refused(name.left)
      const startedMs = yield* Clock.currentTimeMillis
      const seen = {
        peer: args.peer_id.slice(0, 128),
        service: `mcp://${name.right.service}`,
        target: ToolName.format(name.right).slice(0, 300),
        startedMs,
        bytesIn: 0,
        bytesOut: 0,
      }
      // An agent's call outside its scope is refused here: nothing is sent.
      const agent = yield* Effect.serviceOption(CurrentAgent)
      if (Option.isSome(agent)) {
        const decision = AgentScope.toolAllowed(agent.value.scope, name.right.service, name.right.tool)
        if (decision._tag === "Denied") {
          yield* AgentCalls.record({ ...seen, status: 403, refusal: decision.reason })
          return Tool.refused(decision.reason)
        }
      }
      const refusal = yield* Peers.refusal(args.peer_id)
      if (Option.isSome(refusal)) return Tool.refused(refusal.value)
      let required: Readonly<Record<string, string>> | undefined
      if (args.required_labels !== undefined && args.required_labels.trim() !== "") {
        const parsed = Labels.parseList(args.required_labels)
        if (Either.isLeft(parsed)) return Tool.refused(`required_labels must be key=value[,key=value]: ${parsed.left}`)
        required = parsed.right
      }
      const { service, tool } = name.right
      // A retry's state is the one this node gave: the server's own inside, and the rounds so far.
      let round = 1
      let state: string | undefined
      if (args.request_state !== undefined) {
        const unwrapped = InputRequired.unwrapState(args.request_state)
        if (unwrapped === undefined) return Tool.refused("request_state is not one an input_required result gave")
        round = unwrapped.round + 1
        state = unwrapped.state
      }
      const retrying = args.input_responses !== undefined || args.request_state !== undefined
      const options: RemoteCall.Options = {
        ...(required === undefined ? {} : { required }),
        ...(request.onProgress === undefined ? {} : { onProgress: request.onProgress }),
        ...(args.input_responses === undefined ? {} : { inputResponses: args.input_responses }),
        ...(state === undefined ? {} : { requestState: state }),
        ...(retrying ? { round: round - 1 } : {}),
      }
      // The pin check lists the service when no listing is held: it fails as the call would, and is tried again alike.
      const outcome = yield* PinCheck.forCall(args.peer_id, service, tool).pipe(
        Effect.flatMap(
          (pin): Effect.Effect<Attempt, PeerMcpError, PeerMcp | MeshHost> =>
            pin._tag === "Refused"
              ? Effect.succeed({ pin })
              : Effect.map(RemoteCall.call(args.peer_id, service, tool, args.arguments ?? {}, options), (result) => ({
                  pin,
                  result,
                })),
        ),
        Effect.retry({ schedule: RETRY, while: (error) => error.reason === "unreachable" }),
        Effect.either,
      )
      if (Either.isRight(outcome)) {
        const { pin, result } = outcome.right
        if (pin._tag === "Refused" || result === undefined) {
          yield* AgentCalls.record({ ...seen, status: 403, refusal: "tool definition changed or unchecked" })
          return Tool.refused(pin._tag === "Refused" ? pin.message : "")
        }
        yield* AgentCalls.record({ ...seen, status: 200 })
        if (isInputRequired(result)) {
          return InputRequiredView.present(result, { peerId: args.peer_id, toolName: args.tool_name }, round)
        }
        return passOn(
          pin.changed === undefined
            ? result
            : { ...result, _meta: { ...result._meta, [PinCheck.META_KEY]: PinCheck.mark(pin.changed) } },
        )
      }
      const error = outcome.left
      yield* AgentCalls.record({
        ...seen,
        status: error.reason === "refused" ? 403 : 502,
        // Only the rule it names is logged (a serving peer's JSON-RPC refusal comes back as a failure).
        refusal: error.message,
      })
      const target = `${ToolName.format(name.right)} on peer ${args.peer_id}`
      return Tool.refused(
        error.reason === "refused"
          ? `refused: ${error.message}`
          : error.reason === "not_found"
            ? `${target} cannot be called: ${error.message}`
            : error.reason === "unreachable"
              ? `${target} could not be reached (${ATTEMPTS} attempts): ${error.message}`
              : `${target} failed: ${error.message}`,
      )
    }),
})
