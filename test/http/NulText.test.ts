/**
 * Text holding a NUL character, bound for a text column, is refused with 400 on both databases alike and nothing is
 * written: postgres cannot store NUL in text (it answered 500 while sqlite stored it). The refusal is the database
 * layer's, so it holds for every route and encoding. A backslash followed by `u0000` as plain text is no NUL and is
 * kept as given.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin } from "../support/admin.js"
import { describeDatabases } from "../support/databases.js"

const REFUSED = { error: "bad_request", message: "invalid request: text must not contain NUL (U+0000)" }

describeDatabases("NUL in text", (db) => {
  it.scoped("is refused with 400 and nothing is stored; an escaped backslash before u0000 is plain text", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ database: yield* db.fresh })
      const mint = (description: string) =>
        MeshClient.json(cp.url, "POST", "/admin/bootstrap-tokens", cp.adminToken, {
          role: "mesh:role:node",
          description,
        })

      for (const description of ["a\u0000b", "\u0000", "tail\\\u0000"]) {
        const refused = yield* mint(description)
        expect([refused.status, refused.json], JSON.stringify(description)).toEqual([400, REFUSED])
      }
      expect((yield* admin(cp, "GET", "/admin/bootstrap-tokens")).json).toEqual([])

      // The JSON text "a\\u0000b" is the six characters a, \, u, 0, 0, 0, 0, b: no NUL.
      const plain = yield* mint("a\\u0000b")
      expect(plain.status).toBe(201)
      expect((plain.json as { description: string }).description).toBe("a\\u0000b")
    }),
  )
})
