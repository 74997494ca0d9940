/**
 * A small OpenID Connect issuer on loopback: discovery document, JWKS, and a token endpoint that signs ID tokens for
 * whatever subject it is asked. DEVELOPMENT AND TESTS ONLY: it authenticates nobody.
 *
 * It gives `--issuer` a real target on a developer machine (mesh-one) and lets tests exercise the control plane's
 * OIDC paths over real HTTP: key rotation (unknown key id), expiry, audiences.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
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
  /** The private signing keys, for persisting a development issuer across restarts. */
  readonly exportKeys: Effect.Effect<ReadonlyArray<JWK>>
  /** How many times the JWKS has been served, to test that verifiers cache it. */
  readonly jwksFetches: Effect.Effect<number>
}

export interface Options {
  readonly host?: string
  readonly port?: number
  readonly defaultAudience?: string
  /** Private JWKs from `exportKeys`, so tokens signed before a restart stay valid. */
  readonly keys?: ReadonlyArray<JWK>
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

const send = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
  res.end(JSON.stringify(body))
}

const readJson = (req: IncomingMessage): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      try {
        const text = Buffer.concat(chunks).toString("utf8")
        resolve(text.length === 0 ? {} : JSON.parse(text))
      } catch (error) {
        reject(error)
      }
    })
    req.on("error", reject)
  })

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
          response_types_supported: ["id_token"],
          subject_types_supported: ["public"],
          id_token_signing_alg_values_supported: [ALG],
        })
      }
      if (req.method === "GET" && path === "/jwks") {
        jwksFetches++
        return send(res, 200, { keys: keys.map((k) => k.publicJwk) })
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
      exportKeys: Effect.sync(() => keys.map((k) => k.privateJwk)),
      jwksFetches: Effect.sync(() => jwksFetches),
    }
  })
