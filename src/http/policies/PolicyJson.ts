/**
 * The policy document as JSON (protojson of PolicyConfigUpdateRequest), described as a schema: for the OpenAPI
 * document of `POST`/`PUT /policies`, whose handlers read the raw body (strict protojson, or protobuf) themselves, and
 * for the console, which types what it sends with it. Field names are protojson's lowerCamelCase; protojson also
 * accepts the proto names (`allowed_labels`).
 */
import { JSONSchema, Schema } from "effect"

const Patterns = (description: string) => Schema.optional(Schema.Array(Schema.String).annotations({ description }))

export const PolicyRoleJson = Schema.Struct({
  name: Schema.String,
  description: Schema.optional(Schema.String),
  allowedTargets: Patterns("`*` or `fact:value` patterns naming the peers this role may reach"),
  allowedServices: Patterns("`*` or `type://name` patterns naming the services this role may call"),
  allowedLabels: Patterns("`*`, `key=*` or `key=value`: the labels a holder of this role may carry"),
})

export const PolicyBindingJson = Schema.Struct({
  role: Schema.String,
  members: Schema.Array(Schema.String).annotations({
    description: "`mesh:system:authenticated`, `node:<peer_id>`, `user:`, `email:` or `group:` patterns",
  }),
})

export const ToolPinJson = Schema.Struct({
  tool: Schema.String.annotations({ description: "`mcp://<service>/<tool>`" }),
  fingerprint: Schema.String.annotations({
    description: "`sha256:<hex>` of the approved definition, as `mesh-node tools fingerprint` prints it",
  }),
  peerLabels: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.String }).annotations({
      description: "the pin applies to providers attesting every pair; absent: to any provider",
    }),
  ),
})

/** The body of `POST`/`PUT /policies` in JSON: replaces the whole policy. Unknown fields are refused. */
export const PolicyUpdateJson = Schema.Struct({
  roles: Schema.optional(Schema.Array(PolicyRoleJson)),
  bindings: Schema.optional(Schema.Array(PolicyBindingJson)),
  toolPins: Schema.optional(Schema.Array(ToolPinJson)),
}).annotations({ description: "PolicyConfigUpdateRequest as protojson; unknown fields are refused" })
export type PolicyUpdateJson = typeof PolicyUpdateJson.Type

const jsonSchema = (schema: Schema.Schema.Any) => {
  const { $schema: _, ...rest } = JSONSchema.make(schema, { target: "openApi3.1" })
  return rest
}

const binary = { type: "string", format: "binary" }

/** An `OpenApi.Transform` of the policy writes' operation: their request body, in either encoding. */
export const describeUpdateBody = (operation: Record<string, unknown>): Record<string, unknown> => ({
  ...operation,
  requestBody: {
    required: true,
    content: {
      "application/json": { schema: jsonSchema(PolicyUpdateJson) },
      "application/x-protobuf": { schema: binary },
    },
  },
})
