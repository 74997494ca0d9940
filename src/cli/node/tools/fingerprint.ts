/**
 * `mesh-node tools fingerprint <file>`: the fingerprint of each tool definition in a JSON file, the value a policy pin
 * (`tool_pins`) holds. The file may hold one definition, an array of them, a `tools/list` result (`{"tools": [...]}`)
 * or a whole JSON-RPC answer to one; `-` reads stdin. Prints `<fingerprint>  <name>` per tool, as sha256sum does, or
 * JSON with `--json`.
 */
import { readFile } from "node:fs/promises"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Console, Data, Effect } from "effect"
import * as ToolFingerprint from "../../../domain/ToolFingerprint.js"

/** A definition file is a few kilobytes; a tools/list of a large server some hundreds. */
const MAX_FILE_BYTES = 16 * 1024 * 1024

/** The file cannot be read or holds no tool definition (exit 1). */
class ToolFileError extends Data.TaggedError("ToolFileError")<{ readonly message: string }> {}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value)

/** The tool definitions a parsed file holds, in its order. */
const definitionsIn = (value: unknown): ReadonlyArray<unknown> => {
  if (Array.isArray(value)) return value
  if (!isRecord(value)) return []
  if (isRecord(value.result)) return definitionsIn(value.result)
  if (Array.isArray(value.tools)) return value.tools
  return [value]
}

const readText = (path: string): Effect.Effect<string, ToolFileError> =>
  Effect.tryPromise({
    try: async () => {
      if (path !== "-") return (await readFile(path)).subarray(0, MAX_FILE_BYTES + 1)
      const chunks: Array<Buffer> = []
      let size = 0
      for await (const chunk of process.stdin) {
        chunks.push(chunk as Buffer)
        size += (chunk as Buffer).length
        if (size > MAX_FILE_BYTES) break
      }
      return Buffer.concat(chunks)
    },
    catch: (cause) =>
      new ToolFileError({ message: `cannot read ${path}: ${(cause as NodeJS.ErrnoException).code ?? "error"}` }),
  }).pipe(
    Effect.filterOrFail(
      (bytes) => bytes.length <= MAX_FILE_BYTES,
      () => new ToolFileError({ message: `${path} is larger than ${MAX_FILE_BYTES / 1024 / 1024} MiB` }),
    ),
    Effect.map((bytes) => bytes.toString("utf8")),
  )

export const fingerprint = Command.make(
  "fingerprint",
  {
    file: Args.text({ name: "file" }).pipe(
      Args.withDescription("A JSON file: one tool definition, an array, or a tools/list result; - for stdin."),
    ),
    json: Options.boolean("json").pipe(Options.withDescription('Print [{"name", "fingerprint"}] as JSON.')),
  },
  ({ file, json }) =>
    Effect.gen(function* () {
      const text = yield* readText(file)
      const parsed = yield* Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (cause) => new ToolFileError({ message: `${file} is not JSON: ${(cause as Error).message}` }),
      })
      const rows: Array<{ name: string; fingerprint: string }> = []
      for (const [index, definition] of definitionsIn(parsed).entries()) {
        if (!isRecord(definition) || typeof definition.name !== "string" || definition.name.length === 0) {
          return yield* new ToolFileError({ message: `${file}: tool ${index + 1} has no name: not a tool definition` })
        }
        rows.push({ name: definition.name, fingerprint: ToolFingerprint.fingerprint(definition) })
      }
      if (rows.length === 0) return yield* new ToolFileError({ message: `${file} holds no tool definition` })
      yield* Console.log(
        json ? JSON.stringify(rows, null, 2) : rows.map((r) => `${r.fingerprint}  ${r.name}`).join("\n"),
      )
    }),
).pipe(
  Command.withDescription("Print the fingerprint of each tool definition in a JSON file, as a policy pin holds it."),
)
