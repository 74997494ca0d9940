/**
 * `/mesh/catalog/1.0.0`: a peer asks a provider which services it publishes. One stream per question: the asker
 * sends a `CatalogRequest`, the provider answers one `CatalogResponse` and closes; each message is one
 * unsigned-varint length prefix and the protobuf bytes. Only authenticated peers reach the handler (Gate.ts), so the
 * provider's labels come from its credential, never from the answer.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import type { Stream } from "@libp2p/interface"
import { Either } from "effect"
import * as lp from "it-length-prefixed"
import {
  type CatalogRequest,
  CatalogRequestSchema,
  type CatalogResponse,
  CatalogResponseSchema,
  type ServiceInfo,
  ServiceInfoSchema,
} from "../gen/mesh_pb.js"

export const PROTOCOL = "/mesh/catalog/1.0.0"

/** A catalog of the most services a node reports (512) with long descriptions fits well within this. */
export const MAX_FRAME_BYTES = 1024 * 1024
/** Longest description passed on from a provider; it is theirs, shown to our callers. */
export const MAX_DESCRIPTION = 1024

export const encodeRequest = (request: Partial<Pick<CatalogRequest, "type" | "name">>): Uint8Array =>
  toBinary(CatalogRequestSchema, create(CatalogRequestSchema, request))

export const decodeRequest = (bytes: Uint8Array): Either.Either<CatalogRequest, string> =>
  Either.try({ try: () => fromBinary(CatalogRequestSchema, bytes), catch: () => "not a CatalogRequest" })

export const encodeResponse = (services: ReadonlyArray<Pick<ServiceInfo, "type" | "name" | "description">>) =>
  toBinary(
    CatalogResponseSchema,
    create(CatalogResponseSchema, { services: services.map((s) => create(ServiceInfoSchema, s)) }),
  )

export const decodeResponse = (bytes: Uint8Array): Either.Either<CatalogResponse, string> =>
  Either.try({ try: () => fromBinary(CatalogResponseSchema, bytes), catch: () => "not a CatalogResponse" })

export const writeFrame = (stream: Stream, payload: Uint8Array): void => {
  stream.send(lp.encode.single(payload, { maxDataLength: MAX_FRAME_BYTES }))
}

/** Reads exactly one frame; aborting `signal` aborts the stream, which ends the read. */
export const readFrame = async (stream: Stream, signal?: AbortSignal): Promise<Uint8Array> => {
  const onAbort = () => stream.abort(new Error("catalog deadline passed"))
  signal?.addEventListener("abort", onAbort, { once: true })
  try {
    for await (const frame of lp.decode(stream, { maxDataLength: MAX_FRAME_BYTES })) return frame.subarray()
    throw new Error("stream ended before a catalog frame")
  } finally {
    signal?.removeEventListener("abort", onAbort)
  }
}
