/**
 * `/mesh/punch/1.0.0`: DCUtR's exchange (libp2p/specs relay/DCUtR.md) run by the mesh between two authenticated
 * members over their relayed connection, each message one varint-length-prefixed `HolePunch`. The initiator sends
 * CONNECT with its addresses and times the answer; the responder answers CONNECT with its own; the initiator sends
 * SYNC and dials after half the round trip, the responder dials as soon as SYNC arrives, so the two SYNs cross.
 * @libp2p/dcutr runs the same exchange, but its dials leave from ephemeral ports (and its addresses are the listen
 * ones), so no SYN ever matches a NAT mapping: here each side names the port its dial will leave from (DialPorts.ts).
 * Everything a peer sends is capped (one small frame, a few addresses) and checked before use.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import type { Stream } from "@libp2p/interface"
import { lpStream } from "@libp2p/utils"
import { type Multiaddr, multiaddr } from "@multiformats/multiaddr"
import { Either } from "effect"
import { type HolePunch, HolePunch_Type, HolePunchSchema } from "../gen/mesh_pb.js"

export const PROTOCOL = "/mesh/punch/1.0.0"

/** A CONNECT with the most addresses allowed is well under this. */
export const MAX_MESSAGE_BYTES = 2048
/** Addresses read from each list of a peer's CONNECT; the rest are ignored. */
export const MAX_ADDRESSES = 8

export interface Offer {
  /** Where the sender's NAT shows it, at the port its punching dial leaves from. */
  readonly addrs: ReadonlyArray<Multiaddr>
  /** Where it listens, for a peer behind the same NAT. */
  readonly lanAddrs: ReadonlyArray<Multiaddr>
}

export type Message = { readonly type: "connect"; readonly offer: Offer } | { readonly type: "sync" }

/** A plain TCP address: /ip4 or /ip6, then /tcp with a non-zero port, and nothing else. */
const plainTcp = (bytes: Uint8Array): Multiaddr | undefined => {
  try {
    const address = multiaddr(bytes)
    const components = address.getComponents()
    if (components.length !== 2) return undefined
    const [ip, tcp] = components
    if (ip === undefined || tcp === undefined) return undefined
    if (ip.name !== "ip4" && ip.name !== "ip6") return undefined
    if (tcp.name !== "tcp" || tcp.value === undefined) return undefined
    const port = Number(tcp.value)
    return Number.isInteger(port) && port > 0 && port < 65536 ? address : undefined
  } catch {
    return undefined
  }
}

const checked = (list: ReadonlyArray<Uint8Array>): ReadonlyArray<Multiaddr> =>
  list
    .slice(0, MAX_ADDRESSES)
    .map(plainTcp)
    .filter((a): a is Multiaddr => a !== undefined)

export const encode = (message: Message): Uint8Array =>
  toBinary(
    HolePunchSchema,
    create(
      HolePunchSchema,
      message.type === "sync"
        ? { type: HolePunch_Type.SYNC }
        : {
            type: HolePunch_Type.CONNECT,
            addrs: message.offer.addrs.slice(0, MAX_ADDRESSES).map((a) => a.bytes),
            lanAddrs: message.offer.lanAddrs.slice(0, MAX_ADDRESSES).map((a) => a.bytes),
          },
    ),
  )

/** A peer's message, checked: a known type, and only plain TCP addresses kept from a CONNECT. */
export const decode = (bytes: Uint8Array): Either.Either<Message, string> =>
  Either.flatMap(
    Either.try({ try: (): HolePunch => fromBinary(HolePunchSchema, bytes), catch: () => "not a HolePunch message" }),
    (message): Either.Either<Message, string> => {
      if (message.type === HolePunch_Type.SYNC) return Either.right({ type: "sync" })
      if (message.type !== HolePunch_Type.CONNECT) return Either.left("unknown HolePunch type")
      return Either.right({
        type: "connect",
        offer: { addrs: checked(message.addrs), lanAddrs: checked(message.lanAddrs) },
      })
    },
  )

/** One side's end of the exchange: framed messages, each read bounded by `signal`. */
export const framed = (stream: Stream) => {
  const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
  return {
    send: (message: Message, signal: AbortSignal) => lp.write(encode(message), { signal }),
    receive: async (signal: AbortSignal): Promise<Message> => {
      const decoded = decode((await lp.read({ signal })).subarray())
      if (Either.isLeft(decoded)) throw new Error(decoded.left)
      return decoded.right
    },
  }
}

export type Framed = ReturnType<typeof framed>

/** The first message must be what the exchange expects next; anything else ends it. */
export const expectConnect = async (side: Framed, signal: AbortSignal): Promise<Offer> => {
  const message = await side.receive(signal)
  if (message.type !== "connect") throw new Error("expected CONNECT")
  return message.offer
}

export const expectSync = async (side: Framed, signal: AbortSignal): Promise<void> => {
  const message = await side.receive(signal)
  if (message.type !== "sync") throw new Error("expected SYNC")
}

/** The IP of a plain TCP address. */
export const hostOf = (address: Multiaddr): string | undefined =>
  address.getComponents().find((c) => c.name === "ip4" || c.name === "ip6")?.value

/** The plain TCP address (IP and port only) of a listen address, or undefined for one that is not TCP over IP. */
export const plainOf = (address: Multiaddr): Multiaddr | undefined => {
  const components = address.getComponents()
  const ip = components.find((c) => c.name === "ip4" || c.name === "ip6")
  const tcp = components.find((c) => c.name === "tcp")
  if (ip?.value === undefined || tcp?.value === undefined || components.some((c) => c.name === "p2p-circuit")) {
    return undefined
  }
  return multiaddr(`/${ip.name}/${ip.value}/tcp/${tcp.value}`)
}
