import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Policy from "../../src/domain/Policy.js"

const A = "https://idp.example.com"
const B = "https://weaker.example.org/"
const issuers = [A, B]

describe("policy members", () => {
  it("an unqualified identity member names the first issuer; a qualified one its own", () => {
    const alice = (issuer: string) => ({ issuer, subject: "alice", email: "alice@example.com", groups: ["eng"] })
    expect(Policy.memberMatches("user:alice", alice(A), issuers)).toBe(true)
    expect(Policy.memberMatches("user:alice", alice(B), issuers)).toBe(false)
    expect(Policy.memberMatches("email:*@example.com", alice(B), issuers)).toBe(false)
    // Qualified: the issuer's spelling may differ by a trailing slash.
    expect(Policy.memberMatches("group:https://weaker.example.org|eng", alice(B), issuers)).toBe(true)
    expect(Policy.memberMatches(`group:${B}|eng`, alice(A), issuers)).toBe(false)
    expect(Policy.memberMatches(`user:${A}/|ali*`, alice(A), issuers)).toBe(true)
    // Node members and the authenticated member ignore issuers.
    expect(Policy.memberMatches("node:12D3KooWx", { peerId: "12D3KooWx" }, issuers)).toBe(true)
    expect(Policy.memberMatches(Policy.AUTHENTICATED, alice(B), issuers)).toBe(true)
  })

  it("a subject holding `|` stays unqualified unless a URL precedes it", () => {
    const who = { issuer: A, subject: "auth0|123", groups: [] }
    expect(Policy.memberMatches("user:auth0|123", who, issuers)).toBe(true)
    expect(Policy.memberMatches(`user:${A}|auth0|123`, who, issuers)).toBe(true)
  })

  it("validation refuses an issuer that is not configured; Datalog names the configured spelling", () => {
    const doc = (member: string): Policy.Document => ({
      roles: [{ name: "r", description: "", allowedTargets: [], allowedServices: [], allowedLabels: [] }],
      bindings: [{ role: "r", members: [member] }],
    })
    expect(Policy.validate(doc("user:https://other.example|x"), issuers)).toEqual(
      Either.left(
        'member "user:https://other.example|x" names issuer "https://other.example", which is not configured',
      ),
    )
    expect(Policy.validate(doc(`user:${B}|*`), issuers)).toEqual(Either.left(`member "user:${B}|*" has no value`))
    expect(Policy.toDatalog(doc("user:https://weaker.example.org|bob"), issuers)).toEqual([
      `role("r") <- issuer("${B}"), user("bob")`,
    ])
    expect(Policy.toDatalog(doc("email:*@example.com"), issuers)).toEqual([
      `role("r") <- issuer("${A}"), email($v), $v.ends_with("@example.com")`,
    ])
  })
})
