/**
 * A small OpenID Connect issuer on loopback: discovery document, JWKS, and a token endpoint that signs ID tokens for
 * whatever subject it is asked. DEVELOPMENT AND TESTS ONLY: it authenticates nobody.
 *
 * It gives `--issuer` a real target on a developer machine (mesh-one) and lets tests exercise the control plane's
 * OIDC paths over real HTTP: key rotation (unknown key id), expiry, audiences. It also runs the authorization code
 * flow with PKCE that browsers use (the console's sign-in): `/authorize` shows a form asking which subject to sign in
 * as, redirects back with a one-time code, and `/token` trades that code for an ID token.
 */
import { createHash, randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { Clock, Effect, type Scope } from "effect"
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from "jose"

export interface IdTokenClaims {
  readonly sub: string
  readonly aud?: string | ReadonlyArray<string>
  readonly email?: string
  readonly email_verified?: boolean
  readonly groups?: string | ReadonlyArray<string>
  readonly [claim: string]: unknown
}

export interface MintOptions {
  /** Lifetime in seconds from now (the caller's Clock). Default 3600. Negative yields an expired token. */
  readonly expiresInSeconds?: number
  /** Sign with a key the JWKS does not publish, to test rejection of unknown keys. */
  readonly foreignKey?: boolean
  /** Override the `iss` claim, to test tokens from another issuer. */
  readonly issuer?: string
}

export interface DevOidcIssuer {
  /** The issuer URL (`http://127.0.0.1:<port>`), which is also the `iss` of every token. */
  readonly url: string
  readonly defaultAudience: string
  readonly mint: (claims: IdTokenClaims, options?: MintOptions) => Effect.Effect<string>
  /** Replaces the signing key; the JWKS then publishes the new key next to the old one. */
  readonly rotateKey: Effect.Effect<void>
  /** Stops publishing every key but the newest (the signing key), as an issuer that withdraws a key does. */
  readonly withdrawOldKeys: Effect.Effect<void>
  /** The private signing keys, for persisting a development issuer across restarts. */
  readonly exportKeys: Effect.Effect<ReadonlyArray<JWK>>
  /** How many times the JWKS has been served, to test that verifiers cache it. */
  readonly jwksFetches: Effect.Effect<number>
  /** Whether connections are served; when not, each is cut at once, as if the issuer were down. */
  readonly setAnswering: (answering: boolean) => Effect.Effect<void>
}

export interface Options {
  readonly host?: string
  readonly port?: number
  readonly defaultAudience?: string
  /** Private JWKs from `exportKeys`, so tokens signed before a restart stay valid. */
  readonly keys?: ReadonlyArray<JWK>
  /** Start down (connections cut) until `setAnswering(true)`: an outage on an address that stays the issuer's. */
  readonly answering?: boolean
  /** The JWKS answer's Cache-Control, e.g. `public, max-age=60`; default `no-store` like every other answer. */
  readonly jwksCacheControl?: string
}

const ALG = "ES256"

interface SigningKey {
  readonly kid: string
  readonly privateJwk: JWK
  readonly publicJwk: JWK
}

const newKey = async (): Promise<SigningKey> => {
  const pair = await generateKeyPair(ALG, { extractable: true })
  const privateJwk = await exportJWK(pair.privateKey)
  const publicJwk = await exportJWK(pair.publicKey)
  const kid = `dev-${Math.random().toString(36).slice(2, 10)}`
  return { kid, privateJwk: { ...privateJwk, kid, alg: ALG }, publicJwk: { ...publicJwk, kid, alg: ALG, use: "sig" } }
}

const fromJwk = (privateJwk: JWK): SigningKey => {
  const { d: _d, ...publicJwk } = privateJwk
  return { kid: privateJwk.kid ?? "dev", privateJwk, publicJwk: { ...publicJwk, use: "sig" } }
}

const send = (res: ServerResponse, status: number, body: unknown, cacheControl = "no-store") => {
  res.writeHead(status, { "content-type": "application/json", "cache-control": cacheControl })
  res.end(JSON.stringify(body))
}

const readText = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const readJson = (req: IncomingMessage): Promise<unknown> =>
  readText(req).then((text) => (text.length === 0 ? {} : JSON.parse(text)))

const isForm = (req: IncomingMessage) =>
  (req.headers["content-type"] ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded")

/** A code handed out by `/authorize`, waiting for `/token`. */
interface PendingCode {
  readonly clientId: string
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly nonce: string | undefined
  readonly claims: IdTokenClaims
}

/** Codes never redeemed are forgotten beyond this many, oldest first. */
const MAX_PENDING_CODES = 1000

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The sign-in form: which subject to be. The authorization request rides along in hidden fields. */
const authorizePage = (params: URLSearchParams) => {
  const hidden = [...params]
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("")
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Development issuer: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>
<h1>Development OIDC issuer</h1><p>Development only: anyone may sign in as anyone here.</p>
<form method="post" action="/authorize">${hidden}
<p><label for="sub">Subject</label> <input id="sub" name="sub" required autofocus></p>
<p><label for="email">Email (optional)</label> <input id="email" name="email" type="email"></p>
<p><button type="submit">Sign in</button></p></form></body></html>`
}

const sendHtml = (res: ServerResponse, status: number, html: string) => {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
  res.end(html)
}

const challengeOf = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

/** The checks of an authorization request; the reason when it cannot be served. */
const authorizeProblem = (params: URLSearchParams): string | undefined => {
  if (params.get("response_type") !== "code") return "response_type must be code"
  if ((params.get("client_id") ?? "") === "") return "client_id is required"
  const redirect = params.get("redirect_uri") ?? ""
  if (!URL.canParse(redirect) || !/^https?:$/.test(new URL(redirect).protocol)) return "redirect_uri must be a URL"
  if (params.get("code_challenge_method") !== "S256" || (params.get("code_challenge") ?? "") === "") {
    return "PKCE with S256 is required"
  }
  return undefined
}

/** Starts the issuer for the life of the scope. */
export const make = (options: Options = {}): Effect.Effect<DevOidcIssuer, never, Scope.Scope> =>
  Effect.gen(function* () {
    const keys: Array<SigningKey> =
      options.keys !== undefined && options.keys.length > 0
        ? options.keys.map(fromJwk)
        : [yield* Effect.promise(newKey)]
    const foreign = yield* Effect.promise(newKey)
    const defaultAudience = options.defaultAudience ?? "mesh-mesh-audience"
    let url = ""
    let jwksFetches = 0
    const codes = new Map<string, PendingCode>()

    const sign = (claims: IdTokenClaims, opts: MintOptions, nowSeconds: number) =>
      Effect.promise(async () => {
        const key = opts.foreignKey === true ? foreign : (keys[keys.length - 1] as SigningKey)
        const { aud, ...rest } = claims
        return new SignJWT({ ...rest })
          .setProtectedHeader({ alg: ALG, kid: key.kid, typ: "JWT" })
          .setIssuer(opts.issuer ?? url)
          .setAudience((aud ?? defaultAudience) as string | Array<string>)
          .setIssuedAt(nowSeconds)
          .setExpirationTime(nowSeconds + (opts.expiresInSeconds ?? 3600))
          .sign(await importJWK(key.privateJwk, ALG))
      })

    const mint = (claims: IdTokenClaims, opts: MintOptions = {}) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => sign(claims, opts, Math.floor(now / 1000)))

    const server = createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0]
      if (req.method === "GET" && path === "/.well-known/openid-configuration") {
        return send(res, 200, {
          issuer: url,
          jwks_uri: `${url}/jwks`,
          token_endpoint: `${url}/token`,
          authorization_endpoint: `${url}/authorize`,
          response_types_supported: ["code", "id_token"],
          grant_types_supported: ["authorization_code"],
          code_challenge_methods_supported: ["S256"],
          token_endpoint_auth_methods_supported: ["none"],
          subject_types_supported: ["public"],
          id_token_signing_alg_values_supported: [ALG],
        })
      }
      if (req.method === "GET" && path === "/jwks") {
        jwksFetches++
        return send(res, 200, { keys: keys.map((k) => k.publicJwk) }, options.jwksCacheControl)
      }
      if (req.method === "GET" && path === "/authorize") {
        const params = new URLSearchParams((req.url ?? "").slice((req.url ?? "").indexOf("?") + 1))
        const problem = authorizeProblem(params)
        if (problem !== undefined)
          return sendHtml(res, 400, `<!doctype html><title>Bad request</title><p>${problem}</p>`)
        return sendHtml(res, 200, authorizePage(params))
      }
      if (req.method === "POST" && path === "/authorize") {
        readText(req)
          .then((text) => {
            const params = new URLSearchParams(text)
            const problem = authorizeProblem(params)
            const sub = params.get("sub") ?? ""
            if (problem !== undefined || sub === "") {
              return sendHtml(
                res,
                400,
                `<!doctype html><title>Bad request</title><p>${problem ?? "sub is required"}</p>`,
              )
            }
            const email = params.get("email") ?? ""
            const code = randomBytes(24).toString("base64url")
            if (codes.size >= MAX_PENDING_CODES) codes.delete(codes.keys().next().value as string)
            codes.set(code, {
              clientId: params.get("client_id") ?? "",
              redirectUri: params.get("redirect_uri") ?? "",
              codeChallenge: params.get("code_challenge") ?? "",
              nonce: params.get("nonce") ?? undefined,
              claims: { sub, ...(email === "" ? {} : { email, email_verified: true }) },
            })
            const target = new URL(params.get("redirect_uri") ?? "")
            target.searchParams.set("code", code)
            const state = params.get("state")
            if (state !== null) target.searchParams.set("state", state)
            res.writeHead(303, { location: target.toString(), "cache-control": "no-store" })
            res.end()
          })
          .catch(() => send(res, 400, { error: "invalid_request" }))
        return
      }
      if (req.method === "POST" && path === "/token" && isForm(req)) {
        // The authorization code grant, as an OAuth public client speaks it.
        readText(req)
          .then((text) => {
            const params = new URLSearchParams(text)
            const code = params.get("code") ?? ""
            const pending = codes.get(code)
            codes.delete(code)
            if (
              params.get("grant_type") !== "authorization_code" ||
              pending === undefined ||
              params.get("client_id") !== pending.clientId ||
              params.get("redirect_uri") !== pending.redirectUri ||
              challengeOf(params.get("code_verifier") ?? "") !== pending.codeChallenge
            ) {
              return send(res, 400, { error: "invalid_grant" })
            }
            const claims = {
              ...pending.claims,
              aud: pending.clientId,
              ...(pending.nonce === undefined ? {} : { nonce: pending.nonce }),
            }
            // Runs outside any test's fiber: the live clock is the right one for a browser's sign-in.
            return Effect.runPromise(mint(claims)).then((id_token) =>
              send(res, 200, { id_token, token_type: "Bearer", expires_in: 3600 }),
            )
          })
          .catch(() => send(res, 400, { error: "invalid_request" }))
        return
      }
      if (req.method === "POST" && path === "/token") {
        // Development convenience: an ID token for any subject, e.g. {"sub":"alice","email":"alice@example.com"}.
        readJson(req)
          .then((body) => {
            const claims = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>
            if (typeof claims.sub !== "string" || claims.sub.length === 0) {
              return send(res, 400, { error: "bad_request", message: "sub is required" })
            }
            const { expires_in, ...rest } = claims
            // Runs outside any test: the live clock is the right one for a token a developer asked for.
            return Effect.runPromise(
              mint(rest as IdTokenClaims, { expiresInSeconds: Number(expires_in ?? 3600) }),
            ).then((id_token) => send(res, 200, { id_token, token_type: "Bearer" }))
          })
          .catch(() => send(res, 400, { error: "bad_request", message: "body must be JSON" }))
        return
      }
      send(res, 404, { error: "not_found", message: "no such route" })
    })

    let answering = options.answering ?? true
    // Kept-alive connections too: an issuer that goes down cuts the ones open.
    const open = new Set<Socket>()
    server.on("connection", (socket) => {
      if (!answering) return socket.destroy()
      open.add(socket)
      socket.on("close", () => open.delete(socket))
    })

    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        }),
    )
    const address = server.address() as AddressInfo
    url = `http://${address.address}:${address.port}`

    return {
      url,
      defaultAudience,
      mint,
      rotateKey: Effect.promise(async () => {
        keys.push(await newKey())
      }),
      withdrawOldKeys: Effect.sync(() => {
        keys.splice(0, keys.length - 1)
      }),
      exportKeys: Effect.sync(() => keys.map((k) => k.privateJwk)),
      jwksFetches: Effect.sync(() => jwksFetches),
      setAnswering: (on) =>
        Effect.sync(() => {
          answering = on
          if (!on) for (const socket of open) socket.destroy()
        }),
    }
  })
