/**
 * What the control plane serves for the console, without a browser: the page and its files with their security
 * headers, the OpenAPI description of the JSON API, and the two sign-in steps of the console's OIDC flow.
 */
import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ControlPlaneApi } from "../../src/http/Api.js"
import { CONTENT_SECURITY_POLICY } from "../../src/http/console/Assets.js"
import { routesOf } from "../../src/http/RouteTable.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { describeDatabases } from "../support/databases.js"

const get = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { redirect: "manual", ...init })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

describe("the console's files", () => {
  it.scoped(
    "the page and every file it names come with the self-only policy; files carrying a hash are immutable",
    () =>
      Effect.gen(function* () {
        const cp = yield* Harness.make()
        const page = yield* get(`${cp.url}/console`)
        expect(page.status).toBe(200)
        expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
        expect(page.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY)
        expect(page.headers.get("x-content-type-options")).toBe("nosniff")
        expect(page.headers.get("referrer-policy")).toBe("no-referrer")
        expect(page.headers.get("x-frame-options")).toBe("DENY")
        expect(page.headers.get("cache-control")).toBe("no-cache")
        // No inline script or style, nothing from elsewhere.
        expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)/)
        expect(page.text).not.toMatch(/<style|\sstyle=|\son[a-z]+=/)
        const files = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string)
        expect(files.length).toBe(3)
        for (const file of files) {
          expect(file).toMatch(/^\/console\/assets\/[a-z]+-[A-Z0-9]{8}\.(js|css|svg)$/)
          const answer = yield* get(`${cp.url}${file}`)
          expect(answer.status).toBe(200)
          expect(answer.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY)
          expect(answer.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
          expect(answer.headers.get("content-type")).toMatch(/^(text\/javascript|text\/css|image\/svg\+xml)/)
        }
        expect((yield* get(`${cp.url}${files[0]}`, { method: "HEAD" })).status).toBe(200)
      }),
  )

  it.scoped(
    "an unknown file is 404 in the error body; the page answers under one spelling, /console/ leads there",
    () =>
      Effect.gen(function* () {
        const cp = yield* Harness.make()
        const missing = yield* get(`${cp.url}/console/assets/console-AAAAAAAA.js`)
        expect([missing.status, JSON.parse(missing.text)]).toEqual([
          404,
          { error: "not_found", message: "no such console file" },
        ])
        for (const spelling of ["/Console", "/console/index.html", "/console/assets/", "/console//"]) {
          expect((yield* get(`${cp.url}${spelling}`)).status).toBe(404)
        }
        // The address people type: sent to the one spelling, the query kept (a sign-in's return).
        for (const [typed, location] of [
          ["/console/", "/console"],
          ["/console/?code=x", "/console?code=x"],
        ] as const) {
          const answer = yield* get(`${cp.url}${typed}`)
          expect([answer.status, answer.headers.get("location")], typed).toEqual([308, location])
        }
        expect((yield* get(`${cp.url}/console/`, { redirect: "follow" })).status).toBe(200)
      }),
  )
})

describe("GET /openapi.json", () => {
  it.scoped("describes every operator and user route with its body schema and the one error body", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make()
      const answer = yield* get(`${cp.url}/openapi.json`)
      expect(answer.status).toBe(200)
      expect(answer.headers.get("content-type")).toContain("application/json")
      const spec = JSON.parse(answer.text) as {
        openapi: string
        paths: Record<string, Record<string, { operationId: string; requestBody?: unknown; responses: object }>>
        components: { schemas: Record<string, unknown> }
      }
      expect(spec.openapi).toBe("3.1.0")
      const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
        Object.entries(item).map(([method, op]) => ({ path, method, op })),
      )

      // Every route of the definition that operators and users call is there, under its method.
      const wanted = routesOf(ControlPlaneApi).filter((r) => /^\/(admin|user|policies)/.test(r.path))
      expect(wanted.length).toBeGreaterThan(15)
      for (const route of wanted) {
        const path = route.path.replace(/:(\w+)/g, "{$1}")
        expect(spec.paths[path]?.[route.method.toLowerCase()], `${route.method} ${path}`).toBeDefined()
      }
      // Every route that takes a body describes it.
      for (const [path, method] of [
        ["/admin/bootstrap-tokens", "post"],
        ["/admin/revoke", "post"],
        ["/admin/nodes/{peer_id}/autonomous-recovery", "post"],
        ["/user/bootstrap-tokens", "post"],
        ["/user/revoke", "post"],
        ["/policies", "post"],
        ["/policies", "put"],
        ["/console/sign-in/token", "post"],
      ] as const) {
        expect(spec.paths[path]?.[method]?.requestBody, `${method} ${path}`).toBeDefined()
      }
      expect(JSON.stringify(spec.paths["/policies"]?.post?.requestBody)).toContain("allowedLabels")
      expect(JSON.stringify(spec.paths["/admin/bootstrap-tokens"]?.post?.requestBody)).toContain("ttl_hours")

      // Failures are described as they are sent: {error, message}.
      const failures = operations.flatMap(({ op }) =>
        Object.entries(op.responses).filter(([status]) => Number(status) >= 400),
      )
      expect(failures.length).toBeGreaterThan(20)
      for (const [, response] of failures) {
        expect(JSON.stringify(response)).toContain('"$ref":"#/components/schemas/ErrorBody"')
      }
      expect(spec.components.schemas.ErrorBody).toMatchObject({ required: ["error", "message"] })
      // Every reference resolves; ids are unique; the page, its files and this document are not API routes.
      for (const [, name] of answer.text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
        expect(spec.components.schemas[name as string], name).toBeDefined()
      }
      const ids = operations.map(({ op }) => op.operationId)
      expect(new Set(ids).size).toBe(ids.length)
      expect(
        Object.keys(spec.paths).filter(
          (p) => p === "/console" || p.startsWith("/console/assets") || p === "/openapi.json",
        ),
      ).toEqual([])
    }),
  )
})

/** Signs in at the dev issuer's form as `sub`, as a browser would; the code and state of the redirect back. */
const authorize = (issuer: DevOidcIssuer.DevOidcIssuer, sub: string, challenge: string, redirectUri: string) =>
  Effect.promise(async () => {
    const form = new URLSearchParams({
      response_type: "code",
      client_id: issuer.defaultAudience,
      redirect_uri: redirectUri,
      scope: "openid email",
      state: "state-1",
      nonce: "nonce-1",
      code_challenge: challenge,
      code_challenge_method: "S256",
      sub,
    })
    const response = await fetch(`${issuer.url}/authorize`, { method: "POST", body: form, redirect: "manual" })
    const location = new URL(response.headers.get("location") ?? "")
    return { status: response.status, location, code: location.searchParams.get("code") ?? "" }
  })

// A PKCE pair: the verifier and base64url(SHA-256(verifier)).
const VERIFIER = "a-verifier-of-forty-three-characters-or-more-0123456789"
const CHALLENGE = createHash("sha256").update(VERIFIER).digest("base64url")

describeDatabases("console sign-in", (db) => {
  it.scopedLive("options come from the issuer; a code becomes an ID token the user API accepts, once", () =>
    Effect.gen(function* () {
      const issuer = yield* DevOidcIssuer.make()
      const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url] })
      const options = yield* get(`${cp.url}/console/sign-in`)
      expect(JSON.parse(options.text)).toEqual({
        issuer: issuer.url,
        client_id: "mesh-mesh-audience",
        authorization_endpoint: `${issuer.url}/authorize`,
        scope: "openid email profile",
      })

      const redirectUri = `${cp.url}/console`
      const { status, location, code } = yield* authorize(issuer, "carol", CHALLENGE, redirectUri)
      expect(status).toBe(303)
      expect(`${location.origin}${location.pathname}`).toBe(redirectUri)
      expect(location.searchParams.get("state")).toBe("state-1")
      const exchange = (verifier: string) =>
        MeshClient.request(`${cp.url}/console/sign-in/token`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ code, code_verifier: verifier, redirect_uri: redirectUri }),
        })
      const signedIn = yield* exchange(VERIFIER)
      expect(signedIn.status).toBe(200)
      expect(signedIn.headers.get("cache-control")).toBe("no-store")
      const { id_token } = JSON.parse(new TextDecoder().decode(signedIn.body)) as { id_token: string }
      const me = yield* MeshClient.json(cp.url, "GET", "/user/status", id_token)
      expect(me.json).toMatchObject({ user: { id: `${issuer.url}|carol`, subject: "carol" } })

      // A code is good once; the issuer's refusal is a 401 in words.
      const replayed = yield* exchange(VERIFIER)
      expect([replayed.status, MeshClient.errorOf(replayed).message]).toEqual([
        401,
        "the issuer did not accept the sign-in code (HTTP status 400)",
      ])
      const other = yield* authorize(issuer, "carol", CHALLENGE, redirectUri)
      const wrongVerifier = yield* MeshClient.request(`${cp.url}/console/sign-in/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ code: other.code, code_verifier: `${VERIFIER}x`, redirect_uri: redirectUri }),
      })
      expect(wrongVerifier.status).toBe(401)
      const malformed = yield* MeshClient.request(`${cp.url}/console/sign-in/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ code: other.code, code_verifier: "short", redirect_uri: redirectUri }),
      })
      expect([malformed.status, MeshClient.errorOf(malformed).message]).toEqual([400, "invalid request: code_verifier"])
    }),
  )

  it.scopedLive("an unreachable issuer is 503 in words; the code exchange is rate limited like enrollment", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ database: yield* db.fresh, enrollRateLimit: { perSecond: 1, burst: 1 } })
      const options = yield* get(`${cp.url}/console/sign-in`)
      expect(options.status).toBe(503)
      expect(JSON.parse(options.text).message).toMatch(/^OIDC issuer .* is unavailable: discovery document: /)
      const body = JSON.stringify({ code: "c", code_verifier: VERIFIER, redirect_uri: `${cp.url}/console` })
      const post = () =>
        MeshClient.request(`${cp.url}/console/sign-in/token`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        })
      expect((yield* post()).status).toBe(503)
      expect((yield* post()).status).toBe(429)
    }),
  )
})
