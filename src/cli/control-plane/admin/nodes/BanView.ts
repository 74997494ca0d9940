/** What ban and unban answer, and how the commands print it. */
import * as Options from "@effect/cli/Options"

export interface BanView {
  readonly peer_id: string
  readonly banned: boolean
  readonly identity: string | null
  readonly changed: boolean
}

export const peer = Options.text("peer").pipe(Options.withDescription("Peer ID of the node (12D3KooW...)."))

export const describe = (view: BanView): string => {
  const what = view.banned ? "banned" : "unbanned"
  if (!view.changed) return `${view.peer_id} was ${view.banned ? "already banned" : "not banned"}`
  return `${what} ${view.peer_id}${view.identity === null ? "" : ` and identity ${view.identity}`}; announced to running routers and nodes`
}
