/**
 * A certified OpenID provider (`oidc-provider` from npm, run by `oidcProvider.mjs`) as a child process, behind a
 * forwarder whose address is its issuer: a test restarts it with other keys, or stops it, and the control plane keeps
 * the one address. ID tokens come from the provider itself, through the authorization code flow with PKCE driven
 * over HTTP as a browser would (the provider's interaction page signs in the `login_hint` subject at once).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import { join } from "node:path"
import { Effect, type Scope } from "effect"
import { exportJWK, generateKeyPair, type JWK } from "jose"
import * as Forwarder from "../scale/Forwarder.js"

const SCRIPT = join(import.meta.dirname, "oidcProvider.mjs")
/** Never followed: the flow stops at the redirect that carries the code. */
const REDIRECT_URI = "http://127.0.0.1:1/console"

/** A private ES256 signing key named `kid`, as the provider's configuration takes it. */
export const newKey = (kid: string): Effect.Effect<JWK> =>
  Effect.promise(async () => {
    const pair = await generateKeyPair("ES256", { extractable: true })
    return { ...(await exportJWK(pair.privateKey)), kid, alg: "ES256", use: "sig" }
  })

export interface OidcProvider {
  /** The issuer identifier: the forwarder's address. */
  readonly issuer: string
  readonly clientId: string
  /** Starts a provider publishing `keys` (signing with the first), then retires the one running, if any. */
  readonly start: (keys: ReadonlyArray<JWK>) => Effect.Effect<void, Error>
  /** Kills the provider: the issuer's address refuses connections until the next start. */
  readonly stop: Effect.Effect<void>
  /** An ID token for `subject` from the running provider. */
  readonly idToken: (subject: string) => Effect.Effect<string, Error>
  /** JWKS answers the running provider has given. */
  readonly jwksReads: Effect.Effect<number, Error>
}

export interface Options {
  readonly clientId: string
  /** `Cache-Control: max-age` of the JWKS answer, in seconds. */
  readonly jwksMaxAge?: number
}

const spawnProvider = (env: NodeJS.ProcessEnv) =>
  Effect.async<{ readonly child: ChildProcess; readonly port: number }, Error>((resume) => {
    const child = spawn(process.execPath, [SCRIPT], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let output = ""
    let done = false
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      const line = output.split("\n").find((l) => l.startsWith('{"port":'))
      if (line === undefined || done) return
      done = true
      resume(Effect.succeed({ child, port: (JSON.parse(line) as { port: number }).port }))
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    child.once("exit", (code) => {
      if (done) return
      done = true
      resume(Effect.fail(new Error(`oidc-provider exited (${code}) before listening: ${output}`)))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const kill = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGKILL")
  })

const fetchOk = (url: string, init: RequestInit = {}) =>
  Effect.tryPromise({ try: () => fetch(url, { ...init, redirect: "manual" }), catch: (e) => new Error(String(e)) })

export const make = (options: Options): Effect.Effect<OidcProvider, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const forwarder = yield* Forwarder.make(1)
    const issuer = forwarder.url
    let running: ChildProcess | undefined
    yield* Effect.addFinalizer(() => (running === undefined ? Effect.void : kill(running)))

    const start = (keys: ReadonlyArray<JWK>) =>
      Effect.gen(function* () {
        const started = yield* spawnProvider({
          MESH_TEST_OP_ISSUER: issuer,
          MESH_TEST_OP_KEYS: JSON.stringify(keys),
          MESH_TEST_OP_CLIENT: JSON.stringify({ client_id: options.clientId, redirect_uri: REDIRECT_URI }),
          ...(options.jwksMaxAge === undefined ? {} : { MESH_TEST_OP_JWKS_MAX_AGE: String(options.jwksMaxAge) }),
        })
        // The new one answers before the old one goes: the issuer is never down during a restart.
        const previous = running
        running = started.child
        yield* forwarder.target(started.port)
        if (previous !== undefined) yield* kill(previous)
      })

    const stop = Effect.suspend(() => {
      const child = running
      running = undefined
      return child === undefined ? Effect.void : kill(child)
    })

    const idToken = (subject: string) =>
      Effect.gen(function* () {
        const verifier = randomBytes(32).toString("base64url")
        const cookies = new Map<string, string>()
        let url = `${issuer}/auth?${new URLSearchParams({
          client_id: options.clientId,
          response_type: "code",
          scope: "openid",
          redirect_uri: REDIRECT_URI,
          login_hint: subject,
          state: randomBytes(8).toString("hex"),
          nonce: randomBytes(8).toString("hex"),
          code_challenge: createHash("sha256").update(verifier).digest("base64url"),
          code_challenge_method: "S256",
        })}`
        // /auth → the interaction (signed in at once) → /auth again → the redirect URI with the code.
        for (let hop = 0; hop < 5; hop++) {
          const answer = yield* fetchOk(url, {
            headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join("; ") },
          })
          for (const cookie of answer.headers.getSetCookie()) {
            const [pair = ""] = cookie.split(";")
            const at = pair.indexOf("=")
            cookies.set(pair.slice(0, at), pair.slice(at + 1))
          }
          const location = answer.headers.get("location")
          if (location === null) {
            return yield* Effect.fail(
              new Error(`sign-in stopped at ${answer.status}: ${yield* Effect.promise(() => answer.text())}`),
            )
          }
          const next = new URL(location, issuer)
          if (next.href.startsWith(REDIRECT_URI)) {
            const token = yield* fetchOk(`${issuer}/token`, {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({
                grant_type: "authorization_code",
                code: next.searchParams.get("code") ?? "",
                redirect_uri: REDIRECT_URI,
                client_id: options.clientId,
                code_verifier: verifier,
              }).toString(),
            })
            const body = (yield* Effect.promise(() => token.json())) as { id_token?: string }
            if (body.id_token === undefined)
              return yield* Effect.fail(new Error(`no ID token: ${JSON.stringify(body)}`))
            return body.id_token
          }
          url = next.href
        }
        return yield* Effect.fail(new Error("sign-in did not come back with a code"))
      })

    const jwksReads = Effect.flatMap(fetchOk(`${issuer}/test/jwks-reads`), (answer) =>
      Effect.promise(() => answer.json() as Promise<{ reads: number }>),
    ).pipe(Effect.map((body) => body.reads))

    return { issuer, clientId: options.clientId, start, stop, idToken, jwksReads }
  })
