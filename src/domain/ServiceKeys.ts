/**
 * How a published service is named outside its node: the DHT keys providers announce (CIDv1, raw codec, over the
 * SHA-256 of `mesh:service:<type>` and of `mesh:service:<type>:<name>`) and the gossip topic of each service key
 * (a tool name or a model id), `/mesh/discovery/v1/<type>/<first 16 hex digits of sha256(key)>`, plus one topic per
 * service name, `/mesh/discovery/v1/<type>/service/<first 16 hex digits of sha256(name)>`.
 */
import { createHash } from "node:crypto"
import { CID } from "multiformats/cid"
import * as raw from "multiformats/codecs/raw"
import * as Digest from "multiformats/hashes/digest"
import { ServiceType as WireType } from "../gen/mesh_pb.js"
import { SERVICE_TYPES, type ServiceType } from "./ServiceType.js"

/** sha2-256 in the multihash table. */
const SHA2_256 = 0x12

/** At most this many keys (sorted tool names, model ids) travel in one announcement. */
export const MAX_ANNOUNCE_KEYS = 64
/** Longest key announced or accepted; tool names and model ids are far shorter. */
export const MAX_KEY_LENGTH = 256

export const TOPIC_PREFIX = "/mesh/discovery/v1"

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/** The text behind a DHT key: the type alone, or type and name. */
export const dhtKeyText = (type: ServiceType, name?: string): string =>
  name === undefined ? `mesh:service:${type}` : `mesh:service:${type}:${name}`

export const cid = (type: ServiceType, name?: string): CID =>
  CID.createV1(raw.code, Digest.create(SHA2_256, sha256(dhtKeyText(type, name))))

export const topic = (type: ServiceType, key: string): string =>
  `${TOPIC_PREFIX}/${type}/${sha256(key).toString("hex").slice(0, 16)}`

/**
 * The topic on which a named service is announced, whether or not it has keys: discovery by name listens to it so
 * that a provider is found from gossip too, not only from the DHT (whose records a restarted router has lost). One
 * topic per name, not per type: a listener hears the providers of what it looks for, not every service of the mesh.
 */
export const serviceTopic = (type: ServiceType, name: string): string =>
  `${TOPIC_PREFIX}/${type}/service/${sha256(name).toString("hex").slice(0, 16)}`

export const isServiceType = (text: string): text is ServiceType =>
  (SERVICE_TYPES as ReadonlyArray<string>).includes(text)

const toWireTable: Record<ServiceType, WireType> = {
  mcp: WireType.MCP,
  inference: WireType.INFERENCE,
  a2a: WireType.A2A,
}

export const toWire = (type: ServiceType): WireType => toWireTable[type]

/** The service type of a wire value; none for UNSPECIFIED, EGRESS and unknown numbers. */
export const fromWire = (type: WireType): ServiceType | undefined =>
  SERVICE_TYPES.find((name) => toWireTable[name] === type)
