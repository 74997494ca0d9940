/**
 * The proxy streams peers hold open on this node: counted against each peer's share, and reset when their request's
 * headers are late (the server never listens, so node:http's own `headersTimeout` never runs) or when they go quiet
 * both ways for longer than `idleTimeout`. Admission is synchronous and the deadlines are swept by one fiber
 * (platform/Deadlines): a stream costs no fiber of its own.
 */
import type { IngressSettings } from "../../config/NodeConfig.js"
import type { StreamSocket } from "../../p2p/StreamSocket.js"
import type { Cancel, Deadlines } from "../../platform/Deadlines.js"

export class IngressStreams {
  /** Open streams per peer; a peer's entry goes with its last stream. */
  private readonly open = new Map<string, number>()
  /** Each admitted stream's deadlines; an entry goes with its stream. */
  private readonly guards = new WeakMap<StreamSocket, Guard>()

  constructor(
    private readonly limits: IngressSettings,
    private readonly deadlines: Deadlines,
  ) {}

  /** Takes the stream on if its peer has a share left (and guards it until it closes); else resets it. */
  admit(socket: StreamSocket): boolean {
    if (socket.destroyed) return false
    const peer = socket.remotePeer
    const held = this.open.get(peer) ?? 0
    if (held >= this.limits.maxStreamsPerPeer) {
      // Never handed to the server, whose listener would take the reset as an error.
      socket.once("error", () => undefined)
      socket.abort(new Error("too many streams from this peer"))
      return false
    }
    this.open.set(peer, held + 1)
    const guard = new Guard(socket, this.limits, this.deadlines)
    this.guards.set(socket, guard)
    socket.once("close", () => {
      guard.cancel()
      const left = (this.open.get(peer) ?? 1) - 1
      if (left > 0) this.open.set(peer, left)
      else this.open.delete(peer)
    })
    return true
  }

  /** The request on this stream has its headers: its header deadline is lifted. */
  headersArrived(socket: StreamSocket): void {
    this.guards.get(socket)?.headersArrived()
  }
}

/** One stream's deadlines: its headers, then silence. */
class Guard {
  private cancelHeaders: Cancel
  private cancelIdle: Cancel

  constructor(
    private readonly socket: StreamSocket,
    private readonly limits: IngressSettings,
    private readonly deadlines: Deadlines,
  ) {
    this.cancelHeaders = deadlines.after(limits.headersTimeout, () =>
      socket.abort(new Error("the request's headers did not arrive in time")),
    )
    this.cancelIdle = this.watchIdle(socket.bytesRead + socket.bytesWritten)
  }

  headersArrived(): void {
    this.cancelHeaders()
  }

  cancel(): void {
    this.cancelHeaders()
    this.cancelIdle()
  }

  /** Resets the stream if no byte moves either way within `idleTimeout` of `seen` bytes having moved. */
  private watchIdle(seen: number): Cancel {
    return this.deadlines.after(this.limits.idleTimeout, () => {
      if (this.socket.destroyed) return
      const now = this.socket.bytesRead + this.socket.bytesWritten
      if (now === seen) return this.socket.abort(new Error("the stream was idle too long"))
      this.cancelIdle = this.watchIdle(now)
    })
  }
}
