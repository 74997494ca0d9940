/**
 * An `input_required` result as a tool result any agent can read (a 2025-era agent has no such result type): the
 * requests to answer and the state to send back, as structured content, and a sentence saying how to answer: call
 * `call_remote_tool` again with the same tool and arguments, `input_responses` by the requests' keys and
 * `request_state` as given. The state is the node's own (InputRequired.wrapState: the server's, and the round).
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import * as InputRequired from "../../domain/InputRequired.js"
import type { InputRequired as Result } from "../../services/mcp/PeerMcp.js"

export const present = (
  result: Result,
  target: { readonly peerId: string; readonly toolName: string },
  round: number,
): CallToolResult => {
  const requestState = InputRequired.wrapState(round, result.requestState)
  const structured = {
    resultType: "input_required",
    inputRequests: result.inputRequests ?? {},
    requestState,
    peer_id: target.peerId,
    tool_name: target.toolName,
  }
  const keys = Object.keys(result.inputRequests ?? {})
  return {
    content: [
      {
        type: "text",
        text:
          `The tool needs input before it can finish (${keys.length === 0 ? "no questions" : keys.join(", ")}). ` +
          `Answer each request in inputRequests under its key and call call_remote_tool again with peer_id ` +
          `${target.peerId}, tool_name ${target.toolName}, the same arguments, input_responses {key: answer} and ` +
          `request_state as given.\n${JSON.stringify({ inputRequests: structured.inputRequests, requestState })}`,
      },
    ],
    structuredContent: structured,
  }
}
