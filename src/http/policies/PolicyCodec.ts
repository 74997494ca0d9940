/**
 * The policy on the wire: PolicyConfigUpdateRequest as protobuf or as strict protojson (an unknown field is an
 * error, not silently dropped), and PolicyConfigGetResponse in the format the caller asked for.
 */
import { create, fromBinary, fromJsonString, toBinary, toJsonString } from "@bufbuild/protobuf"
import { timestampFromMs } from "@bufbuild/protobuf/wkt"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import { BadRequest } from "../../domain/Errors.js"
import * as PolicyRules from "../../domain/Policy.js"
import {
  type PolicyConfig,
  PolicyConfigGetResponseSchema,
  PolicyConfigSchema,
  type PolicyConfigUpdateRequest,
  PolicyConfigUpdateRequestSchema,
  PolicyConfigUpdateResponseSchema,
} from "../../gen/mesh_pb.js"
import type { PolicySnapshot } from "../../services/policy/Policy.js"
import { CONTENT_TYPE } from "../Protobuf.js"

export const isJson = (contentType: string | undefined): boolean =>
  (contentType ?? "").toLowerCase().startsWith("application/json")

/** Decodes an update request; `json` selects strict protojson. */
export const decodeUpdate = (body: Uint8Array, json: boolean) =>
  Effect.try({
    try: () => {
      if (json) {
        return fromJsonString(PolicyConfigUpdateRequestSchema, new TextDecoder("utf-8", { fatal: true }).decode(body))
      }
      const message = fromBinary(PolicyConfigUpdateRequestSchema, body)
      // protobuf-es keeps unknown fields aside on every message; any of them, at any depth, is a refusal.
      const parts = [message, ...message.roles, ...message.bindings, ...message.toolPins]
      if (parts.some((part) => (part.$unknown?.length ?? 0) > 0)) throw new Error("unknown field")
      return message
    },
    catch: (error) =>
      new BadRequest({
        message: `body is not a valid PolicyConfigUpdateRequest${
          json && error instanceof Error
            ? `: ${error.message.replace(/^cannot decode message mesh\.v1\.\w+ from JSON: /, "")}`
            : ""
        }`,
      }),
  })

export const toDocument = (message: PolicyConfigUpdateRequest | PolicyConfig): PolicyRules.Document => ({
  roles: message.roles.map((r) => ({
    name: r.name,
    description: r.description,
    allowedTargets: [...r.allowedTargets],
    allowedServices: [...r.allowedServices],
    allowedLabels: [...r.allowedLabels],
  })),
  bindings: message.bindings.map((b) => ({ role: b.role, members: [...b.members] })),
  toolPins: message.toolPins.map((p) => ({
    tool: p.tool,
    fingerprint: p.fingerprint,
    peerLabels: { ...p.peerLabels },
  })),
})

export const fromDocument = (doc: PolicyRules.Document): PolicyConfig =>
  create(PolicyConfigSchema, {
    roles: doc.roles.map((r) => ({
      ...r,
      allowedTargets: [...r.allowedTargets],
      allowedServices: [...r.allowedServices],
      allowedLabels: [...r.allowedLabels],
    })),
    bindings: doc.bindings.map((b) => ({ role: b.role, members: [...b.members] })),
    toolPins: (doc.toolPins ?? []).map((p) => ({ ...p, peerLabels: { ...p.peerLabels } })),
  })

const respond = (json: boolean, body: Uint8Array | string) =>
  json
    ? HttpServerResponse.text(body as string, { contentType: "application/json" })
    : HttpServerResponse.uint8Array(body as Uint8Array, { contentType: CONTENT_TYPE })

export const updateResponse = (json: boolean) => {
  const message = create(PolicyConfigUpdateResponseSchema, { success: true })
  return respond(
    json,
    json
      ? toJsonString(PolicyConfigUpdateResponseSchema, message)
      : toBinary(PolicyConfigUpdateResponseSchema, message),
  )
}

export const getResponse = (snapshot: PolicySnapshot, issuers: PolicyRules.Issuers, json: boolean) => {
  const message = create(PolicyConfigGetResponseSchema, {
    datalogRules: [...PolicyRules.toDatalog(snapshot.document, issuers)],
    policy: fromDocument(snapshot.document),
    version: BigInt(snapshot.version),
    ...(snapshot.updatedAt === undefined ? {} : { updateTime: timestampFromMs(snapshot.updatedAt) }),
  })
  return respond(
    json,
    json ? toJsonString(PolicyConfigGetResponseSchema, message) : toBinary(PolicyConfigGetResponseSchema, message),
  )
}
