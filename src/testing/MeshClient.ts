/**
 * A protobuf client of the control plane's mesh routes, as a node or router speaks them: every request signed with
 * the peer's key for proof of possession. Public test support, and the reference for what a mesh component sends.
 */

import { createHash } from "node:crypto"
import {
  create,
  type DescMessage,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf"
import { Clock, Effect } from "effect"
import * as Biscuit from "../crypto/Biscuit.js"
import * as Challenge from "../domain/Challenge.js"
import * as PeerKey from "../domain/PeerKey.js"
import {
  BootstrapEnrollRequestSchema,
  BootstrapEnrollResponseSchema,
  ControlPlaneInfoResponseSchema,
  EnrollRequestSchema,
  EnrollResponseSchema,
  NodeCatalogReportSchema,
  NodeToolDriftReportSchema,
  RouterLeaseRequestSchema,
  RouterLeaseResponseSchema,
  type ServiceType,
  TokenRefreshRequestSchema,
  TokenRefreshResponseSchema,
} from "../gen/mesh_pb.js"

export interface Peer {
  readonly peerId: string
  readonly seed: Uint8Array
  readonly publicKey: Uint8Array
}

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: Uint8Array
}

/** The JSON error body of a failed answer. */
export const errorOf = (answer: Answer): { readonly error: string; readonly message: string } =>
  JSON.parse(new TextDecoder().decode(answer.body))

export const request = (url: string, init: RequestInit = {}): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, body: new Uint8Array(await response.arrayBuffer()) }
  })

export const postProto = <Desc extends DescMessage>(
  url: string,
  schema: Desc,
  message: MessageInitShape<Desc>,
  headers: Record<string, string> = {},
) =>
  request(url, {
    method: "POST",
    headers: { "content-type": "application/x-protobuf", ...headers },
    body: Buffer.from(toBinary(schema, create(schema, message))),
  })

/** Decodes a 200 answer, failing the test with the error body otherwise. */
export const expectProto = <Desc extends DescMessage>(
  schema: Desc,
  answer: Answer,
): Effect.Effect<MessageShape<Desc>> =>
  answer.status === 200
    ? Effect.sync(() => fromBinary(schema, answer.body))
    : Effect.dieMessage(`expected 200, got ${answer.status}: ${new TextDecoder().decode(answer.body)}`)

/** A proof of possession for `endpoint`, timestamped by the caller's clock (or `atMs`). */
export const challenge = (peer: Peer, endpoint: Challenge.Endpoint, atMs?: number) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const unixMs = BigInt(atMs ?? now)
    return { challengeUnixMs: unixMs, challengeSignature: Challenge.sign(peer.seed, endpoint, peer.peerId, unixMs) }
  })

/** A proof of possession as the headers `GET /enroll/status` and `POST /nodes/catalog` take. */
export const challengeHeaders = (proof: {
  readonly challengeUnixMs: bigint
  readonly challengeSignature: Uint8Array
}) => ({
  "x-mesh-challenge-ts": String(proof.challengeUnixMs),
  "x-mesh-challenge-sig": Challenge.toHeader(proof.challengeSignature),
})

/** POST /refresh with `credential` as bearer. */
export const refresh = (
  baseUrl: string,
  peer: Peer,
  credential: Uint8Array,
  options: { readonly atMs?: number } = {},
) =>
  Effect.flatMap(challenge(peer, "refresh", options.atMs), (proof) =>
    postProto(
      `${baseUrl}/refresh`,
      TokenRefreshRequestSchema,
      { ...proof, peerId: peer.peerId },
      {
        authorization: `Bearer ${Biscuit.toText(credential)}`,
      },
    ),
  )

export const decodeRefresh = (answer: Answer) => expectProto(TokenRefreshResponseSchema, answer)

export interface EnrollOptions {
  readonly role?: string
  readonly labels?: Record<string, string>
  readonly atMs?: number
}

/** POST /enroll with a bootstrap token. */
export const enroll = (baseUrl: string, peer: Peer, bootstrapToken: string, options: EnrollOptions = {}) =>
  Effect.flatMap(challenge(peer, "enroll", options.atMs), (proof) =>
    postProto(`${baseUrl}/enroll`, BootstrapEnrollRequestSchema, {
      ...proof,
      bootstrapToken,
      peerId: peer.peerId,
      publicKey: PeerKey.toProtobuf(peer.publicKey),
      requestedRole: options.role ?? "",
      labels: options.labels ?? {},
    }),
  )

export const decodeEnroll = (answer: Answer) => expectProto(BootstrapEnrollResponseSchema, answer)

/** GET /enroll/status with the challenge in headers; `signAs` signs with another key (to test refusals). */
export const enrollStatus = (
  baseUrl: string,
  peer: Peer,
  options: { readonly atMs?: number; readonly signAs?: Uint8Array } = {},
) =>
  Effect.flatMap(challenge({ ...peer, seed: options.signAs ?? peer.seed }, "enroll-status", options.atMs), (proof) =>
    request(`${baseUrl}/enroll/status?peer_id=${encodeURIComponent(peer.peerId)}`, {
      headers: challengeHeaders(proof),
    }),
  )

/** POST /register with an OIDC ID token. */
export const register = (baseUrl: string, peer: Peer, idToken: string, options: EnrollOptions = {}) =>
  Effect.flatMap(challenge(peer, "register", options.atMs), (proof) =>
    postProto(`${baseUrl}/register`, EnrollRequestSchema, {
      ...proof,
      jwt: idToken,
      peerId: peer.peerId,
      publicKey: PeerKey.toProtobuf(peer.publicKey),
      requestedRole: options.role ?? "mesh:role:node",
      labels: options.labels ?? {},
    }),
  )

export const decodeRegister = (answer: Answer) => expectProto(EnrollResponseSchema, answer)

/** JSON call to the operator or user API with a bearer token. */
export const json = (baseUrl: string, method: string, path: string, bearer: string, body?: unknown) =>
  Effect.map(
    request(`${baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
    (answer) => ({
      ...answer,
      json: answer.body.length === 0 ? undefined : (JSON.parse(new TextDecoder().decode(answer.body)) as unknown),
    }),
  )

/** GET /info, decoded. */
export const info = (baseUrl: string) =>
  Effect.flatMap(request(`${baseUrl}/info`), (answer) => expectProto(ControlPlaneInfoResponseSchema, answer))

/** POST /routers/lease with the router's credential as bearer. */
export const lease = (
  baseUrl: string,
  router: Peer,
  credential: Uint8Array,
  addresses: ReadonlyArray<string>,
  telemetry: { readonly connectedPeers?: ReadonlyArray<string>; readonly dhtSize?: number } = {},
) =>
  Effect.flatMap(challenge(router, "routers-lease"), (proof) =>
    postProto(
      `${baseUrl}/routers/lease`,
      RouterLeaseRequestSchema,
      {
        ...proof,
        peerId: router.peerId,
        addresses: [...addresses],
        connectedPeers: [...(telemetry.connectedPeers ?? [])],
        dhtSize: telemetry.dhtSize ?? 0,
      },
      { authorization: `Bearer ${Biscuit.toText(credential)}` },
    ),
  )

export const decodeLease = (answer: Answer) => expectProto(RouterLeaseResponseSchema, answer)

/**
 * POST /nodes/catalog with the node's credential as bearer and its proof of possession in `X-Mesh-Challenge-Ts` and
 * `X-Mesh-Challenge-Sig`; `signAs` signs with another key, `unsigned` leaves the proof out (to test refusals).
 */
export const reportCatalog = (
  baseUrl: string,
  peer: Peer,
  credential: Uint8Array,
  services: ReadonlyArray<{ readonly type: ServiceType; readonly name: string; readonly description?: string }>,
  options: { readonly atMs?: number; readonly signAs?: Uint8Array; readonly unsigned?: boolean } = {},
) =>
  Effect.flatMap(challenge({ ...peer, seed: options.signAs ?? peer.seed }, "nodes-catalog", options.atMs), (proof) =>
    postProto(
      `${baseUrl}/nodes/catalog`,
      NodeCatalogReportSchema,
      { services: services.map((s) => ({ ...s })) },
      {
        authorization: `Bearer ${Biscuit.toText(credential)}`,
        ...(options.unsigned === true ? {} : challengeHeaders(proof)),
      },
    ),
  )

/**
 * POST /nodes/tool-drift as a node sends it: the node's signature covers the body's sha256 as well. `signAs` signs
 * with another key, `unsigned` leaves the proof out, `signedBody` signs other bytes than those sent (to test
 * refusals).
 */
export const reportToolDrift = (
  baseUrl: string,
  peer: Peer,
  credential: Uint8Array,
  report: MessageInitShape<typeof NodeToolDriftReportSchema>,
  options: {
    readonly atMs?: number
    readonly signAs?: Uint8Array
    readonly unsigned?: boolean
    readonly signedBody?: Uint8Array
  } = {},
) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const body = toBinary(NodeToolDriftReportSchema, create(NodeToolDriftReportSchema, report))
    const unixMs = options.atMs ?? now
    const digest = createHash("sha256")
      .update(options.signedBody ?? body)
      .digest("hex")
    const signature = Challenge.sign(options.signAs ?? peer.seed, "nodes-tool-drift", peer.peerId, unixMs, digest)
    return request(`${baseUrl}/nodes/tool-drift`, {
      method: "POST",
      headers: {
        "content-type": "application/x-protobuf",
        authorization: `Bearer ${Biscuit.toText(credential)}`,
        ...(options.unsigned === true
          ? {}
          : challengeHeaders({ challengeUnixMs: BigInt(unixMs), challengeSignature: signature })),
      },
      body: Buffer.from(body),
    })
  })
