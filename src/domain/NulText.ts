/**
 * Text holding NUL (U+0000) is refused by the database layer on both databases alike: postgres cannot store it
 * (error 22021, "invalid byte sequence ... 0x00") and sqlite would store it, so one database would answer 500 where
 * the other kept the value. Whatever route or encoding (JSON or protobuf) brought the text, the write fails with a
 * SqlError this module recognises, which the API answers with 400 (src/http/ErrorResponse.ts).
 */
import { SqlError } from "@effect/sql/SqlError"

/** The cause code of the sqlite client's refusal. */
const CODE = "MESH_NUL_IN_TEXT"

/** The sqlite client's refusal of a statement whose parameters hold NUL, or undefined when none does. */
export const refuse = (params: ReadonlyArray<unknown>): SqlError | undefined =>
  params.some((p) => typeof p === "string" && p.includes("\u0000"))
    ? new SqlError({ cause: { code: CODE }, message: "text must not contain NUL (U+0000)" })
    : undefined

/** Whether a database failure is text holding NUL: ours from sqlite, or postgres's own. */
export const isNulInText = (error: SqlError): boolean => {
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined
  if (cause?.code === CODE) return true
  return cause?.code === "22021" && typeof cause.message === "string" && cause.message.includes("0x00")
}
