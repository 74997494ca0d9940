/**
 * examples/ (and the example mesh's own files in deploy/compose/): every node configuration decodes with the node's
 * decoder, and every policy is accepted by the control plane's decoding and validation, converted the way
 * examples/policy.yaml says.
 */
import { spawnSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as NodeFile from "../../src/domain/NodeFile.js"
import * as Policy from "../../src/domain/Policy.js"
import { decodeUpdate, toDocument } from "../../src/http/policies/PolicyCodec.js"
import { root } from "./support.js"

const examples = join(root, "examples")
const nodeFiles = [
  ...readdirSync(examples)
    .filter((f) => f.startsWith("mesh-node-") && f.endsWith(".yaml"))
    .map((f) => join(examples, f)),
  join(root, "deploy", "compose", "node-a.yaml"),
  join(root, "deploy", "compose", "node-b.yaml"),
]

/** The policy as the documented command sends it: `npx yaml --json --single`, the yaml package's own CLI. */
const asProtojson = (file: string): Uint8Array => {
  const result = spawnSync(process.execPath, [join(root, "node_modules", "yaml", "bin.mjs"), "--json", "--single"], {
    input: readFileSync(file),
    encoding: "buffer",
  })
  if (result.status !== 0) throw new Error(`yaml --json failed: ${result.stderr.toString()}`)
  return result.stdout
}

const accepted = (file: string, issuers: Policy.Issuers) =>
  Effect.runSync(Effect.either(decodeUpdate(asProtojson(file), true))).pipe(
    Either.mapLeft((error) => error.message),
    Either.flatMap((message) => Policy.validate(toDocument(message), issuers)),
  )

describe("examples", () => {
  it("has a node configuration for each kind of service, and each decodes", () => {
    const kinds = new Set<string>()
    for (const file of nodeFiles) {
      const parsed = NodeFile.parse(readFileSync(file, "utf8"))
      expect(Either.isRight(parsed), `${file}: ${Either.isLeft(parsed) ? parsed.left : ""}`).toBe(true)
      if (Either.isLeft(parsed)) continue
      for (const service of parsed.right.services) {
        kinds.add(service.command === undefined ? `${service.type} over HTTP` : `${service.type} over stdio`)
      }
    }
    expect([...kinds].sort()).toEqual(["a2a over HTTP", "inference over HTTP", "mcp over HTTP", "mcp over stdio"])
  })

  it("no node configuration says its services go unpublished: stdio ones are published too (see MeshOne.test)", () => {
    for (const file of nodeFiles) expect(readFileSync(file, "utf8"), file).not.toMatch(/not (be )?published/i)
  })

  it("the policy is accepted as written by a control plane with its one issuer, issuer-qualified members included", () => {
    const file = join(examples, "policy.yaml")
    const result = accepted(file, ["https://id.example.com"])
    expect(Either.isRight(result), Either.isLeft(result) ? result.left : "").toBe(true)
    if (Either.isLeft(result)) return
    const members = result.right.bindings.flatMap((b) => b.members)
    expect(members).toContain("user:https://id.example.com|ops-oncall")
    const roles = result.right.roles
    for (const field of ["allowedLabels", "allowedServices", "allowedTargets"] as const) {
      expect(
        roles.some((r) => r[field].length > 0),
        field,
      ).toBe(true)
    }
  })

  it("the policy names its issuer, so a control plane with another one refuses it", () => {
    const result = accepted(join(examples, "policy.yaml"), ["https://login.example.org"])
    expect(result).toEqual(
      Either.left(
        'bindings[2].members[0]: member "user:https://id.example.com|ops-oncall" names issuer "https://id.example.com", which is not configured',
      ),
    )
  })

  it("the example mesh's policy is accepted whatever issuer the mesh is given", () => {
    const result = accepted(join(root, "deploy", "compose", "policy.yaml"), ["https://login.example.org"])
    expect(Either.isRight(result), Either.isLeft(result) ? result.left : "").toBe(true)
  })
})
