/**
 * Gossip among authenticated peers. Inbound gossip streams are already guarded (Gate.ts); on top of that each topic we
 * join gets a validator, so a message is delivered or forwarded only when the peer that handed it to us is
 * authenticated and its origin (`from`, signed) is too, or it came through an authenticated router. Routers accept
 * only origins they authenticated themselves, so trust in a forwarded message rests on the router that admitted its
 * author.
 *
 * Routers are the hubs: they join every topic an authenticated peer subscribes to (gossipsub forwards only on topics
 * a peer has joined), up to a cap.
 */
import { type GossipSub, type Message, TopicValidatorResult } from "@libp2p/gossipsub"
import type { PeerId } from "@libp2p/interface"
import { ROUTER_ROLE } from "../domain/Policy.js"
import type { Admissions } from "./Admissions.js"

/** Most topics a router joins on its peers' behalf; beyond that a topic needs a router that was told to join it. */
export const MAX_HUB_TOPICS = 1024

/** gossipsub's protocols (every version it speaks, and floodsub). */
export const isGossipProtocol = (protocol: string): boolean =>
  protocol.startsWith("/meshsub/") || protocol === "/floodsub/1.0.0"

/**
 * Gossip runs on router links only. Members talk to each other directly, and a member forwarding another member's
 * message vouches for nothing (its origin may be unknown here, so the topic validator ignores it), while gossipsub
 * has already recorded the message as seen: the router's copy, arriving a moment later, was dropped as a duplicate.
 * That lost a third of the ban events at 24 nodes. Every message reaches every member through its routers.
 */
export const gossipsOver = (selfIsRouter: boolean, peerRole: string | undefined): boolean =>
  selfIsRouter || peerRole === ROUTER_ROLE

export const accepts = (admissions: Admissions, via: string, message: Message): boolean => {
  if (message.type !== "signed") return false
  const relay = admissions.get(via)
  if (relay === undefined) return false
  const from = message.from.toString()
  return from === via || admissions.isAuthenticated(from) || relay.role === ROUTER_ROLE
}

export class Topics {
  private readonly members = new Map<string, number>()
  private readonly hub = new Set<string>()

  constructor(
    private readonly pubsub: GossipSub,
    private readonly admissions: Admissions,
  ) {}

  private readonly validator = (source: PeerId, message: Message): TopicValidatorResult =>
    accepts(this.admissions, source.toString(), message) ? TopicValidatorResult.Accept : TopicValidatorResult.Ignore

  /** A local subscriber joins the topic; the first one subscribes the host. */
  join(topic: string): void {
    const count = this.members.get(topic) ?? 0
    this.members.set(topic, count + 1)
    this.ensure(topic)
  }

  /** A local subscriber leaves; the host stays subscribed while it is a hub for the topic. */
  leave(topic: string): void {
    const count = (this.members.get(topic) ?? 1) - 1
    if (count > 0) {
      this.members.set(topic, count)
      return
    }
    this.members.delete(topic)
    if (this.hub.has(topic)) return
    this.pubsub.unsubscribe(topic)
    this.pubsub.topicValidators.delete(topic)
  }

  /** Router side: an authenticated peer subscribed to a topic; false when the cap is reached. */
  hubJoin(topic: string): boolean {
    if (this.hub.has(topic)) return true
    if (this.hub.size >= MAX_HUB_TOPICS) return false
    this.hub.add(topic)
    this.ensure(topic)
    return true
  }

  private ensure(topic: string): void {
    // The validator goes in first: no message on the topic may be accepted without it.
    this.pubsub.topicValidators.set(topic, this.validator)
    if (!this.pubsub.getTopics().includes(topic)) this.pubsub.subscribe(topic)
  }
}

/**
 * Explicit peering (gossipsub's "direct peers") on every link with a router: a router forwards every message to each
 * authenticated member subscribed to its topic, and a member takes every message from its routers, whatever the mesh,
 * its backoffs and scores say. Members hang off routers like leaves and carry no gossip between themselves
 * (`gossipsOver`), so a router's mesh of gossipsub's usual 6 to 12 would leave the rest of its members to IHAVE
 * rounds, and a PRUNE's minute of backoff after a restart could cut one off.
 */
export class RouterPeering {
  constructor(
    private readonly pubsub: GossipSub,
    private readonly admissions: Admissions,
    private readonly selfIsRouter: boolean,
  ) {}

  /** The peer just passed the handshake on a connection. */
  admitted(peerId: string): void {
    const peer = this.admissions.get(peerId)
    if (peer === undefined) return
    if (gossipsOver(this.selfIsRouter, peer.role)) this.direct().add(peerId)
  }

  /** One of the peer's connections closed or it was dropped: unpeered once it is no longer authenticated. */
  settled(peerId: string): void {
    // gossipsub redials its direct peers: a member gone, or a router that went away, must not be dialed by it.
    if (!this.admissions.isAuthenticated(peerId)) this.direct().delete(peerId)
  }

  private direct(): Set<string> {
    return (this.pubsub as unknown as { direct: Set<string> }).direct
  }
}
