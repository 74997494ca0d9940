/** Schemas for columns whose representation differs between sqlite and postgres. */
import { Schema } from "effect"

/** BOOLEAN: postgres returns true/false, sqlite 0/1. Written as 0/1, which both accept. */
export const SqlBoolean = Schema.transform(Schema.Union(Schema.Boolean, Schema.Number), Schema.Boolean, {
  strict: true,
  decode: (value) => value === true || value === 1,
  encode: (value) => value,
})

/** BLOB/BYTEA: both drivers return a Buffer, which is a Uint8Array. */
export const SqlBytes = Schema.Uint8ArrayFromSelf

/** A JSON document kept in a TEXT column. */
export const JsonText = <A, I>(schema: Schema.Schema<A, I>) => Schema.parseJson(schema)

/** A nullable BIGINT (unix milliseconds). */
export const NullableMillis = Schema.NullOr(Schema.Number)

export const toBool = (value: boolean): number => (value ? 1 : 0)

export const toBlob = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
