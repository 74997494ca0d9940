/**
 * Whether a listing federation remembers is older than the one this node holds now for the provider (tool pinning
 * holds the last listing from any path: find_remote_tools, describe_remote_tool, a call's check): a definition seen
 * changed elsewhere makes the next round list the provider again rather than wait for RELIST_EVERY_MS.
 */
import { Effect } from "effect"
import type { Listed } from "../../domain/PeerTools.js"
import { ToolPinning } from "../../services/toolpinning/ToolPinning.js"
import * as Fingerprints from "../toolpinning/Fingerprints.js"

export const isStale = (
  peerId: string,
  service: string,
  listing: ReadonlyArray<Listed>,
): Effect.Effect<boolean, never, ToolPinning> =>
  Effect.gen(function* () {
    const pinning = yield* ToolPinning
    for (const { tool, definition } of listing) {
      const held = yield* pinning.held(peerId, service, tool.name)
      if (held._tag === "NotListed") return true
      if (held._tag === "Judged" && held.judgement.fingerprint !== Fingerprints.of(definition)) return true
    }
    return false
  })
