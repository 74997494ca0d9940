/**
 * Tool pinning before `call_remote_tool` sends a call: a call carries no definition, so the one judged is the
 * definition of the tool in the last listing this node holds of that service on that peer (listed now when none is
 * held and the tool is pinned, or the one held does not have the tool). Under `enforce`, a changed definition is refused with what changed; a listing that fails fails the check as
 * the call would have failed (refused, unreachable...). A tool the listing does not have is called: no definition of
 * it reached an agent from this peer, so none can have changed, and the serving peer says why it does not serve it
 * (its policy may grant this node a part of its tools and list only those). Under `warn` the call goes, marked when
 * changed; `off` checks nothing.
 */
import { Duration, Effect, Either, Option } from "effect"
import * as ToolName from "../../domain/ToolName.js"
import * as ToolPinningRules from "../../domain/ToolPinning.js"
import { PeerMcp, type PeerMcpError } from "../../services/mcp/PeerMcp.js"
import { MeshHost } from "../../services/mesh/MeshHost.js"
import { type Held, ToolPinning } from "../../services/toolpinning/ToolPinning.js"
import * as Judged from "../toolpinning/Judged.js"

const LIST_TIMEOUT = Duration.seconds(10)

export type Checked =
  | { readonly _tag: "Refused"; readonly message: string }
  /** With the judgement when the definition changed and the mode only warns: the result is marked. */
  | { readonly _tag: "Allowed"; readonly changed?: ToolPinningRules.Judgement }

const allowed: Checked = { _tag: "Allowed" }

/** Lists the service now, so that its definitions are held, and says what is held of the tool then. */
const listNow = (peerId: string, service: string, tool: string) =>
  Effect.gen(function* () {
    const listed = yield* Effect.either((yield* PeerMcp).listTools(peerId, service, LIST_TIMEOUT))
    if (Either.isLeft(listed)) return Either.left(listed.left)
    const peer = yield* (yield* MeshHost).peer(peerId)
    const labels = Option.match(peer, { onNone: () => ({}), onSome: (p) => p.labels })
    yield* Judged.listing(peerId, labels, service, listed.right.tools)
    return Either.right(yield* (yield* ToolPinning).held(peerId, service, tool))
  })

export const forCall = (
  peerId: string,
  service: string,
  tool: string,
): Effect.Effect<Checked, PeerMcpError, ToolPinning | PeerMcp | MeshHost> =>
  Effect.gen(function* () {
    const pinning = yield* ToolPinning
    const mode = pinning.modeOf(service)
    if (mode === "off") return allowed
    const first = yield* pinning.held(peerId, service, tool)
    // Nothing listed of the service on that peer and nothing pinned of the tool: no definition of it has reached an
    // agent here, and none is held to compare, so the call goes without a listing's round trip first (the first
    // listing pins it). Where a pin exists, the peer's definition is listed and held against it before the call.
    if (first._tag === "NoListing" && !(yield* pinning.pinned(service, tool))) return allowed
    // A listing held without the tool may be one cut to another caller's scope, or older than the tool: listed again.
    const held: Either.Either<Held, PeerMcpError> =
      first._tag === "Judged" ? Either.right(first) : yield* listNow(peerId, service, tool)
    if (Either.isLeft(held)) return mode === "enforce" ? yield* held.left : allowed
    if (held.right._tag !== "Judged") return allowed
    const { judgement } = held.right
    if (!judgement.usable) {
      const target = `${ToolName.format({ service, tool })} on peer ${peerId}`
      return { _tag: "Refused", message: ToolPinningRules.refusal(target, judgement) }
    }
    return judgement.pin === "changed" ? { _tag: "Allowed", changed: judgement } : allowed
  })

/** What a call of a changed definition (mode `warn`) carries in its result's `_meta`. */
export const META_KEY = "mesh/tool_pin"

export const mark = (judgement: ToolPinningRules.Judgement) => ({
  pin: judgement.pin,
  fingerprint: judgement.fingerprint,
  expected: judgement.expected,
})
