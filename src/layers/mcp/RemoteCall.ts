/**
 * One call of a tool on a peer, as `call_remote_tool` and federated tools both make it: when labels are required,
 * the peer is reached first and must attest one of them; then the call goes over the proxy path (PeerMcp), where
 * the operator's egress floor, the serving peer's policy, the timeouts and the size caps apply. The result is the
 * server's own, a tool error included, or (from a modern server) `input_required`, checked and capped; the retry
 * that answers it carries `inputResponses` and `requestState`. Refusals and failures are PeerMcpErrors, classified.
 */
import { Duration, Effect } from "effect"
import * as InputRequired from "../../domain/InputRequired.js"
import * as Labels from "../../domain/Labels.js"
import { PeerMcp, PeerMcpError, type Progress, type RemoteResult } from "../../services/mcp/PeerMcp.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"

const CONNECT_TIMEOUT = Duration.seconds(15)

const pairs = (labels: Readonly<Record<string, string>>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(",")

/** The peer, reached and authenticated, must attest at least one required pair. */
const checkLabels = (peerId: string, required: Readonly<Record<string, string>>) =>
  Effect.gen(function* () {
    const host = yield* MeshHost
    const peer = yield* host.connect(peerId).pipe(
      Effect.timeoutFail({ duration: CONNECT_TIMEOUT, onTimeout: () => ({ reason: "no connection within 15s" }) }),
      Effect.mapError(
        (error) =>
          new PeerMcpError({ reason: "unreachable", message: `peer ${peerId} is unreachable: ${error.reason}` }),
      ),
    )
    if (!Labels.attestsAny(peer.labels, required)) {
      return yield* new PeerMcpError({
        reason: "refused",
        message: `peer ${peerId} attests none of the required labels (${pairs(required)})`,
      })
    }
  })

export interface Options {
  /** The peer must attest at least one of these pairs. */
  readonly required?: Readonly<Record<string, string>>
  /** Progress notifications of the call, as they arrive. */
  readonly onProgress?: (progress: Progress) => void
  /**
   * The retry of a call that answered `input_required` (a modern server's multi round-trip request): the answers by
   * the keys of its `inputRequests`, and its `requestState` echoed as it came.
   */
  readonly inputResponses?: Readonly<Record<string, unknown>>
  readonly requestState?: string
  /** The client capabilities the call declares to a modern server (InputRequired.RELAYED_CAPABILITIES by default). */
  readonly clientCapabilities?: Readonly<Record<string, unknown>>
  /** How many times this call was retried already; past InputRequired.MAX_ROUNDS it is refused. */
  readonly round?: number
}

export const call = (
  peerId: string,
  service: string,
  tool: string,
  args: Readonly<Record<string, unknown>>,
  options: Options = {},
): Effect.Effect<RemoteResult, PeerMcpError, PeerMcp | MeshHost> =>
  Effect.gen(function* () {
    const { inputResponses, requestState, clientCapabilities } = options
    const retrying = inputResponses !== undefined || requestState !== undefined
    const retry =
      !retrying && clientCapabilities === undefined
        ? undefined
        : {
            ...(inputResponses === undefined ? {} : { inputResponses }),
            ...(requestState === undefined ? {} : { requestState }),
            ...(clientCapabilities === undefined ? {} : { clientCapabilities }),
          }
    if (retry !== undefined && retrying) {
      if ((options.round ?? 1) > InputRequired.MAX_ROUNDS) {
        return yield* new PeerMcpError({
          reason: "failed",
          message: `the tool asked for input more than ${InputRequired.MAX_ROUNDS} times`,
        })
      }
      const refusal = InputRequired.checkRetry(retry)
      if (refusal !== undefined) return yield* new PeerMcpError({ reason: "failed", message: refusal })
    }
    if (options.required !== undefined) yield* checkLabels(peerId, options.required)
    return yield* (yield* PeerMcp).callTool(peerId, service, tool, args, options.onProgress, retry)
  })
