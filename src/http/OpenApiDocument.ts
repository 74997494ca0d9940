/**
 * `GET /openapi.json`: the JSON API described from the same HttpApi definition the server routes and the console's
 * client is typed with. What the generator cannot know is set right here: every failure is the one error body of
 * `ErrorResponse.ts`, not the tagged error it was in the handler.
 */
import * as OpenApi from "@effect/platform/OpenApi"
import { ControlPlaneApi } from "./Api.js"

const ERROR_BODY = "ErrorBody"

const errorBodySchema = {
  type: "object",
  required: ["error", "message"],
  properties: {
    error: { type: "string", description: "stable snake_case code: bad_request, unauthorized, not_found, ..." },
    message: { type: "string", description: "for people; never quotes a secret" },
  },
  additionalProperties: false,
}

type Json = Record<string, unknown>

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null

/** Every 4xx and 5xx answer of `operation` carries the error body. */
const withErrorBody = (operation: Json): Json => {
  const responses = isRecord(operation.responses) ? operation.responses : {}
  const rewritten: Json = {}
  for (const [status, response] of Object.entries(responses)) {
    rewritten[status] =
      Number(status) >= 400 && isRecord(response)
        ? {
            description: status === "400" ? "Bad request" : response.description,
            content: { "application/json": { schema: { $ref: `#/components/schemas/${ERROR_BODY}` } } },
          }
        : response
  }
  return { ...operation, responses: rewritten }
}

/** The component schemas `value` refers to, with those they refer to in turn. */
const referenced = (value: unknown, schemas: Json): Json => {
  const kept: Json = {}
  const pending = [JSON.stringify(value)]
  for (let text = pending.pop(); text !== undefined; text = pending.pop()) {
    for (const [, name] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
      if (name === undefined || name in kept || !(name in schemas)) continue
      kept[name] = schemas[name]
      pending.push(JSON.stringify(schemas[name]))
    }
  }
  return kept
}

export const make = (): Json => {
  // Walked as the plain JSON it is: the generator's interfaces have no index signatures to walk it by.
  const spec = OpenApi.fromApi(ControlPlaneApi) as unknown as Json
  const paths: Json = {}
  for (const [path, item] of Object.entries(isRecord(spec.paths) ? spec.paths : {})) {
    const operations: Json = {}
    for (const [method, operation] of Object.entries(isRecord(item) ? item : {})) {
      operations[method] = isRecord(operation) ? withErrorBody(operation) : operation
    }
    paths[path] = operations
  }
  const components = isRecord(spec.components) ? spec.components : {}
  const schemas = { ...(isRecord(components.schemas) ? components.schemas : {}), [ERROR_BODY]: errorBodySchema }
  return {
    ...spec,
    info: {
      title: "mesh control plane",
      version: "1",
      description:
        "Operator routes take the admin token and user routes an ID token from the configured issuer, both as " +
        "Authorization: Bearer. Mesh routes speak protobuf (messages in proto/mesh.proto).",
    },
    paths,
    // The tagged errors' schemas are no longer referenced once every failure names the error body.
    components: { ...components, schemas: referenced(paths, schemas) },
  }
}
