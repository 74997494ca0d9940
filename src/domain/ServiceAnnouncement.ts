/**
 * Service announcements (`ServiceAnnounce`), gossiped by providers on the topic of each key they serve
 * (ServiceKeys.topic): who serves which keys of which service, with what labels and how many requests in flight.
 * Gossip signs every message with the sender's peer key (StrictSign), and the announcement must name that sender.
 * A hint for ranking and fast lookups, never authorization: callers still check the provider's credential.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt"
import { Either } from "effect"
import { type ServiceAnnounce, ServiceAnnounceSchema } from "../gen/mesh_pb.js"
import * as Labels from "./Labels.js"
import { isServiceName } from "./NodeFile.js"
import * as ServiceKeys from "./ServiceKeys.js"
import type { ServiceType } from "./ServiceType.js"

/** How far an announcement's time may be from the receiver's clock. */
export const MAX_SKEW_MS = 2 * 60 * 1000
/** Most labels an announcement may carry (credentials carry a handful). */
const MAX_LABELS = 64

export interface Announcement {
  readonly peerId: string
  readonly type: ServiceType
  readonly service: string
  readonly keys: ReadonlyArray<string>
  readonly labels: Readonly<Record<string, string>>
  readonly activeRequests: number
  readonly announcedAtMs: number
}

export const encode = (announcement: Announcement): Uint8Array =>
  toBinary(
    ServiceAnnounceSchema,
    create(ServiceAnnounceSchema, {
      peerId: announcement.peerId,
      type: ServiceKeys.toWire(announcement.type),
      serviceName: announcement.service,
      keys: announcement.keys.slice(0, ServiceKeys.MAX_ANNOUNCE_KEYS),
      labels: { ...announcement.labels },
      activeRequests: Math.max(0, Math.min(0xffffffff, Math.floor(announcement.activeRequests))),
      announceTime: timestampFromMs(announcement.announcedAtMs),
    }),
  )

/** Decodes and checks an announcement that gossip delivered from `sender` (the verified signer). */
export const decode = (bytes: Uint8Array, sender: string, nowMs: number): Either.Either<Announcement, string> => {
  let message: ServiceAnnounce
  try {
    message = fromBinary(ServiceAnnounceSchema, bytes)
  } catch {
    return Either.left("not a ServiceAnnounce")
  }
  if (message.peerId !== sender) return Either.left("peer_id is not the sender")
  const type = ServiceKeys.fromWire(message.type)
  if (type === undefined) return Either.left("unknown service type")
  if (!isServiceName(message.serviceName)) return Either.left("invalid service name")
  if (message.keys.length > ServiceKeys.MAX_ANNOUNCE_KEYS) return Either.left("too many keys")
  if (message.keys.some((key) => key.length === 0 || key.length > ServiceKeys.MAX_KEY_LENGTH)) {
    return Either.left("invalid key")
  }
  if (Object.keys(message.labels).length > MAX_LABELS) return Either.left("too many labels")
  if (Either.isLeft(Labels.validate(message.labels))) return Either.left("invalid labels")
  if (message.announceTime === undefined) return Either.left("no announce time")
  const announcedAtMs = timestampDate(message.announceTime).getTime()
  if (!Number.isFinite(announcedAtMs) || Math.abs(nowMs - announcedAtMs) > MAX_SKEW_MS) {
    return Either.left("too far from our clock")
  }
  return Either.right({
    peerId: message.peerId,
    type,
    service: message.serviceName,
    keys: message.keys,
    labels: message.labels,
    activeRequests: message.activeRequests,
    announcedAtMs,
  })
}
