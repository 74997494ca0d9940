/**
 * Protobuf bodies (`application/x-protobuf`) on HttpApi routes: the payload and success schemas are raw bytes; the
 * handler decodes with protobuf-es (a malformed body is a 400) and answers with `respond`.
 */
import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import { BadRequest } from "../domain/Errors.js"

export const CONTENT_TYPE = "application/x-protobuf"

/** Payload or success schema of a protobuf route. */
export const Body = HttpApiSchema.Uint8Array({ contentType: CONTENT_TYPE })

export const decode = <Desc extends DescMessage>(schema: Desc, bytes: Uint8Array) =>
  Effect.try({
    try: () => fromBinary(schema, bytes),
    catch: () => new BadRequest({ message: `body is not a valid ${schema.name}` }),
  })

/** A protobuf response; `noStore` for responses that carry a credential. */
export const respond = <Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
  options: { readonly noStore?: boolean } = {},
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.uint8Array(toBinary(schema, message), {
    contentType: CONTENT_TYPE,
    ...(options.noStore === true ? { headers: { "cache-control": "no-store" } } : {}),
  })
