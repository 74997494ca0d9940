/** ControlPlaneClient over fetch, with a bounded wait per request (on the Effect clock). */
import { createHash } from "node:crypto"
import { create, type DescMessage, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf"
import { Clock, Duration, Effect, Layer } from "effect"
import * as Biscuit from "../../crypto/Biscuit.js"
import * as Challenge from "../../domain/Challenge.js"
import * as PeerKey from "../../domain/PeerKey.js"
import {
  BootstrapEnrollRequestSchema,
  BootstrapEnrollResponseSchema,
  ControlPlaneInfoResponseSchema,
  EnrollRequestSchema,
  EnrollResponseSchema,
  NodeCatalogReportSchema,
  NodeToolDriftReportSchema,
  PolicyConfigGetResponseSchema,
  RouterLeaseRequestSchema,
  RouterLeaseResponseSchema,
  TokenRefreshRequestSchema,
  TokenRefreshResponseSchema,
} from "../../gen/mesh_pb.js"
import {
  ControlPlaneClient,
  ControlPlaneRefused,
  ControlPlaneUnreachable,
  type Signer,
} from "../../services/member/ControlPlaneClient.js"

const TIMEOUT = Duration.seconds(15)
const PROTOBUF = "application/x-protobuf"

/**
 * Why fetch failed, with its cause: fetch says only "fetch failed" and keeps the reason (connection refused, a name
 * that does not resolve, a certificate) in `cause`.
 */
export const failure = (error: unknown): string => {
  const e = error as { message?: string; cause?: { message?: string; code?: string } }
  const cause = e.cause?.message ?? e.cause?.code
  const message = e.message ?? String(error)
  return cause === undefined || cause === "" ? message : `${message}: ${cause}`
}

export const make = (baseUrl: string) => {
  const url = baseUrl.replace(/\/+$/, "")
  /** Every failure names the URL asked, so the operator sees which address (and which flag) to check. */
  const unreachable = (path: string, why: string) => new ControlPlaneUnreachable({ reason: `${url}${path}: ${why}` })

  const call = (path: string, init: RequestInit) =>
    Effect.tryPromise({
      try: (signal) => fetch(`${url}${path}`, { ...init, signal }),
      catch: (error) => unreachable(path, failure(error)),
    }).pipe(
      Effect.timeoutFail({
        duration: TIMEOUT,
        onTimeout: () => unreachable(path, `no answer within ${Duration.format(TIMEOUT)}`),
      }),
      Effect.flatMap((response) =>
        Effect.tryPromise({
          try: () => response.arrayBuffer(),
          catch: (error) => unreachable(path, failure(error)),
        }).pipe(Effect.map((body) => ({ status: response.status, body: new Uint8Array(body) }))),
      ),
      Effect.flatMap(({ status, body }) => {
        if (status >= 200 && status < 300) return Effect.succeed(body)
        let code = "unknown"
        let reason = `HTTP ${status}`
        try {
          const parsed = JSON.parse(new TextDecoder().decode(body)) as { error?: string; message?: string }
          code = parsed.error ?? code
          reason = parsed.message ?? reason
        } catch {
          // Not our error body (a proxy in between): keep the status.
        }
        return Effect.fail(
          status >= 500
            ? unreachable(path, `HTTP ${status}: ${reason}`)
            : new ControlPlaneRefused({ status, code, reason }),
        )
      }),
    )

  const decode =
    <Desc extends DescMessage>(schema: Desc) =>
    (bytes: Uint8Array) =>
      Effect.try({
        try: () => fromBinary(schema, bytes),
        catch: () => new ControlPlaneUnreachable({ reason: `${url}: answer is not a ${schema.name}` }),
      })

  const post = <In extends DescMessage, Out extends DescMessage>(
    path: string,
    input: In,
    message: MessageInitShape<In>,
    output: Out,
    headers: Record<string, string> = {},
  ) =>
    call(path, {
      method: "POST",
      headers: { "content-type": PROTOBUF, ...headers },
      body: Buffer.from(toBinary(input, create(input, message))),
    }).pipe(Effect.flatMap(decode(output)))

  const proof = (signer: Signer, endpoint: Challenge.Endpoint) =>
    Effect.map(Clock.currentTimeMillis, (now) => ({
      challengeUnixMs: BigInt(now),
      challengeSignature: Challenge.sign(signer.seed, endpoint, signer.peerId, now),
    }))

  const bearer = (credential: Uint8Array) => ({ authorization: `Bearer ${Biscuit.toText(credential)}` })

  return ControlPlaneClient.of({
    url,
    enroll: (signer, request) =>
      Effect.flatMap(proof(signer, "enroll"), (p) =>
        post(
          "/enroll",
          BootstrapEnrollRequestSchema,
          {
            ...p,
            bootstrapToken: request.bootstrapToken,
            peerId: signer.peerId,
            publicKey: PeerKey.toProtobuf(signer.publicKey),
            requestedRole: request.role,
            labels: { ...request.labels },
          },
          BootstrapEnrollResponseSchema,
        ),
      ),
    enrollStatus: (signer) =>
      Effect.flatMap(proof(signer, "enroll-status"), (p) =>
        call(`/enroll/status?peer_id=${encodeURIComponent(signer.peerId)}`, {
          headers: {
            "x-mesh-challenge-ts": String(p.challengeUnixMs),
            "x-mesh-challenge-sig": Challenge.toHeader(p.challengeSignature),
          },
        }).pipe(Effect.flatMap(decode(BootstrapEnrollResponseSchema))),
      ),
    register: (signer, request) =>
      Effect.flatMap(proof(signer, "register"), (p) =>
        post(
          "/register",
          EnrollRequestSchema,
          {
            ...p,
            jwt: request.idToken,
            peerId: signer.peerId,
            publicKey: PeerKey.toProtobuf(signer.publicKey),
            requestedRole: request.role,
            labels: { ...request.labels },
          },
          EnrollResponseSchema,
        ),
      ),
    refresh: (signer, credential) =>
      Effect.flatMap(proof(signer, "refresh"), (p) =>
        post(
          "/refresh",
          TokenRefreshRequestSchema,
          { ...p, peerId: signer.peerId },
          TokenRefreshResponseSchema,
          bearer(credential),
        ),
      ),
    keys: call("/keys", {}),
    policies: (credential) =>
      call("/policies", { headers: { accept: PROTOBUF, ...bearer(credential) } }).pipe(
        Effect.flatMap(decode(PolicyConfigGetResponseSchema)),
      ),
    reportCatalog: (signer, credential, services) =>
      Effect.flatMap(proof(signer, "nodes-catalog"), (p) =>
        call("/nodes/catalog", {
          method: "POST",
          headers: {
            "content-type": PROTOBUF,
            ...bearer(credential),
            "x-mesh-challenge-ts": String(p.challengeUnixMs),
            "x-mesh-challenge-sig": Challenge.toHeader(p.challengeSignature),
          },
          body: Buffer.from(
            toBinary(NodeCatalogReportSchema, create(NodeCatalogReportSchema, { services: [...services] })),
          ),
        }),
      ).pipe(Effect.asVoid),
    reportToolDrift: (signer, credential, report) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const body = toBinary(NodeToolDriftReportSchema, create(NodeToolDriftReportSchema, report))
        const digest = createHash("sha256").update(body).digest("hex")
        return call("/nodes/tool-drift", {
          method: "POST",
          headers: {
            "content-type": PROTOBUF,
            ...bearer(credential),
            "x-mesh-challenge-ts": String(now),
            "x-mesh-challenge-sig": Challenge.toHeader(
              Challenge.sign(signer.seed, "nodes-tool-drift", signer.peerId, now, digest),
            ),
          },
          body: Buffer.from(body),
        })
      }).pipe(Effect.asVoid),
    info: call("/info", {}).pipe(Effect.flatMap(decode(ControlPlaneInfoResponseSchema))),
    lease: (signer, credential, lease) =>
      Effect.flatMap(proof(signer, "routers-lease"), (p) =>
        post(
          "/routers/lease",
          RouterLeaseRequestSchema,
          {
            ...p,
            peerId: signer.peerId,
            addresses: [...lease.addresses],
            connectedPeers: [...lease.connectedPeers],
            dhtSize: lease.dhtSize,
          },
          RouterLeaseResponseSchema,
          bearer(credential),
        ),
      ),
  })
}

export const layer = (baseUrl: string) => Layer.sync(ControlPlaneClient, () => make(baseUrl))
