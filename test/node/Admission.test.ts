/**
 * Who the local API lets in before any agent token is checked: the one rule the middleware and the front share.
 * The end-to-end behaviour is in BearerToken, Agents and Front tests; here each case of the rule, on its own.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Admission from "../../src/node/Admission.js"

const TOKEN = "mesh-api-the-right-one"
const AGENT = "a".repeat(300)
const isApiToken = (token: string) => token === TOKEN

const tagOf = (admission: Admission.Admission) =>
  admission._tag === "Refused" ? `Refused ${admission.error._tag}` : admission._tag

describe("Admission.admit", () => {
  it("admits the API token from X-Mesh-Authentication, or from Authorization where the route forwards nothing", () => {
    const own = Admission.admit({ "x-mesh-authentication": `Bearer ${TOKEN}` }, "forwarding", false, isApiToken)
    expect(own).toEqual({ _tag: "Admitted", headers: {} })
    const bearer = Admission.admit({ authorization: `Bearer ${TOKEN}`, accept: "*/*" }, "token", false, isApiToken)
    expect(bearer).toEqual({ _tag: "Admitted", headers: { accept: "*/*" } })
  })

  it("never passes the API token on, whichever header carried it", () => {
    // On a forwarding route `Authorization` is the service's; holding the API token there is no credential, but
    // it is removed all the same.
    const forwarded = Admission.admit(
      { "x-mesh-authentication": `Bearer ${TOKEN}`, authorization: `Bearer ${TOKEN}` },
      "forwarding",
      false,
      isApiToken,
    )
    expect(forwarded).toEqual({ _tag: "Admitted", headers: {} })
    expect(tagOf(Admission.admit({ authorization: `Bearer ${TOKEN}` }, "forwarding", false, isApiToken))).toBe(
      "Refused Unauthorized",
    )
    // The service's own credential travels on.
    const services = Admission.admit(
      { "x-mesh-authentication": `Bearer ${TOKEN}`, authorization: "Bearer sk-service" },
      "forwarding",
      false,
      isApiToken,
    )
    expect(services).toEqual({ _tag: "Admitted", headers: { authorization: "Bearer sk-service" } })
  })

  it("refuses over TCP: nothing (401), a malformed header (401), a wrong token (403)", () => {
    expect(tagOf(Admission.admit({}, "token", false, isApiToken))).toBe("Refused Unauthorized")
    expect(tagOf(Admission.admit({ "x-mesh-authentication": TOKEN }, "token", false, isApiToken))).toBe(
      "Refused Unauthorized",
    )
    expect(tagOf(Admission.admit({ "x-mesh-authentication": "Bearer nope" }, "token", false, isApiToken))).toBe(
      "Refused Forbidden",
    )
    expect(tagOf(Admission.admit({ authorization: "Bearer nope" }, "token", false, isApiToken))).toBe(
      "Refused Forbidden",
    )
  })

  it("admits anything on a trusted listener, a client's own Authorization left alone", () => {
    expect(Admission.admit({}, "token", true, isApiToken)).toEqual({ _tag: "Admitted", headers: {} })
    expect(Admission.admit({ authorization: "Bearer sk-own" }, "token", true, isApiToken)).toEqual({
      _tag: "Admitted",
      headers: { authorization: "Bearer sk-own" },
    })
    expect(tagOf(Admission.admit({ "x-mesh-authentication": "garbled" }, "token", true, isApiToken))).toBe("Admitted")
  })

  it("hands what looks like an agent token to the caller to check, trusted listener or not", () => {
    for (const trusted of [false, true]) {
      const inOwn = Admission.admit(
        { "x-mesh-authentication": `Bearer ${AGENT}`, authorization: "Bearer sk-service" },
        "forwarding",
        trusted,
        isApiToken,
      )
      expect(inOwn).toEqual({
        _tag: "Agent",
        token: AGENT,
        header: "x-mesh-authentication",
        headers: { authorization: "Bearer sk-service" },
      })
      if (inOwn._tag !== "Agent") throw new Error("unreachable")
      expect(Admission.withoutAgentToken(inOwn)).toEqual({ authorization: "Bearer sk-service" })

      const inAuthorization = Admission.admit({ authorization: `Bearer ${AGENT}` }, "token", trusted, isApiToken)
      expect(tagOf(inAuthorization)).toBe("Agent")
      if (inAuthorization._tag !== "Agent") throw new Error("unreachable")
      // Taken as the agent's, it is not passed on; refused as no agent's, a trusted caller's own token is.
      expect(Admission.withoutAgentToken(inAuthorization)).toEqual({})
      expect(inAuthorization.headers).toEqual({ authorization: `Bearer ${AGENT}` })
    }
    // On a forwarding route a long `Authorization` is the service's, not an agent's.
    expect(tagOf(Admission.admit({ authorization: `Bearer ${AGENT}` }, "forwarding", true, isApiToken))).toBe(
      "Admitted",
    )
  })

  it("compares each presented token with the API token once", () => {
    const compared: Array<string> = []
    const counting = (token: string) => {
      compared.push(token)
      return isApiToken(token)
    }
    for (const token of [TOKEN, "wrong", AGENT]) {
      compared.length = 0
      Admission.admit({ authorization: `Bearer ${token}` }, "token", false, counting)
      expect(compared).toEqual([token])
    }
  })
})
