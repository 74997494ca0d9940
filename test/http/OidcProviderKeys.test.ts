/**
 * The control plane's hold on its issuer's keys, against a certified OpenID provider (`oidc-provider` from npm) run
 * as a child process (`test/support/OidcProvider.ts`). The ID tokens are the provider's own, from the authorization
 * code flow; only the made-up tokens of the flood are signed here, with a key the provider never published. The
 * provider restarts publishing other keys, or stops, on an address that stays the issuer's. Real time throughout,
 * with the margins said where a duration matters.
 */
import { expect, it } from "@effect/vitest"
import { Duration, Effect, Logger, LogLevel } from "effect"
import { exportJWK, generateKeyPair, importJWK, SignJWT } from "jose"
import * as KeySchedule from "../../src/domain/IssuerKeySchedule.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { setPolicy } from "../support/admin.js"
import { eventually } from "../support/eventually.js"
import { seriesValue } from "../support/metrics.js"
import * as OidcProvider from "../support/OidcProvider.js"

const CLIENT_ID = "mesh-console"
/** Read again every 2 s: a re-read has 2 s to land before the check, room on a loaded machine. */
const MAX_AGE = Duration.seconds(4)
const NOT_RECOGNISED = "ID token validation failed: signature or key not recognised"

const POLICY = {
  roles: [{ name: "mesh:role:node" }],
  bindings: [{ role: "mesh:role:node", members: ["user:alice"] }],
}

interface Ready {
  readonly status: string
  readonly issuer_keys: ReadonlyArray<{ issuer: string; keys: string; read_at: string | null; problem: string | null }>
}

/** A provider publishing one new key, and a control plane trusting it whose log lines the test keeps. */
const setup = (keysMaxAge?: Duration.Duration) =>
  Effect.gen(function* () {
    const provider = yield* OidcProvider.make({ clientId: CLIENT_ID })
    const first = yield* OidcProvider.newKey("first")
    yield* provider.start([first])
    const logged: Array<string> = []
    const cp = yield* Harness.make({
      issuers: [provider.issuer],
      allowedAudiences: [CLIENT_ID],
      ...(keysMaxAge === undefined ? {} : { oidcKeysMaxAge: keysMaxAge }),
      logLevel: LogLevel.Info,
      logger: Logger.make(({ logLevel, message }) => {
        logged.push(`${logLevel.label} ${String(message)}`)
      }),
    })
    yield* setPolicy(cp, POLICY)
    const register = (idToken: string, peer = PeerKey.generate()) =>
      Effect.map(MeshClient.register(cp.url, peer, idToken), (answer) => ({
        status: answer.status,
        message: answer.status === 200 ? "" : MeshClient.errorOf(answer).message,
      }))
    const userStatus = (idToken: string) =>
      Effect.map(MeshClient.json(cp.url, "GET", "/user/status", idToken), (answer) => answer.status)
    const ready = Effect.promise(() =>
      fetch(`${cp.url}/readyz`).then(async (r) => [r.status, (await r.json()) as Ready] as const),
    )
    const metric = (series: string) =>
      Effect.promise(() => fetch(`${cp.url}/metrics`).then((r) => r.text())).pipe(
        Effect.map((text) => seriesValue(text, series) ?? 0),
      )
    return { provider, first, cp, register, userStatus, ready, metric, logged: () => [...logged] }
  })

it.scopedLive("a key the provider withdraws is refused within --oidc-keys-max-age", () =>
  Effect.gen(function* () {
    const { provider, register } = yield* setup(MAX_AGE)
    const before = yield* provider.idToken("alice")
    expect(yield* register(before)).toEqual({ status: 200, message: "" })

    // The provider restarts publishing only a new key: the first one is withdrawn from now on.
    yield* provider.start([yield* OidcProvider.newKey("second")])
    const withdrawnAt = Date.now()
    // The control plane reads the keys every half max age: the withdrawal is seen two seconds after it at the latest,
    // and the check comes at four.
    yield* Effect.sleep(Duration.millis(Duration.toMillis(MAX_AGE) - (Date.now() - withdrawnAt)))
    expect(yield* register(before)).toEqual({ status: 401, message: NOT_RECOGNISED })
    expect(yield* register(yield* provider.idToken("alice"))).toEqual({ status: 200, message: "" })
  }),
)

it.scopedLive("a token under a newly published key is accepted at once after a flood of unknown key ids", () =>
  Effect.gen(function* () {
    // The default max age: no scheduled read comes to help during the test.
    const { provider, first, register, userStatus, metric } = yield* setup()
    expect(yield* register(yield* provider.idToken("alice"))).toEqual({ status: 200, message: "" })

    // 1,000 tokens naming key ids the provider never published, as anybody can send to /register.
    const forger = yield* Effect.promise(async () => {
      const pair = await generateKeyPair("ES256", { extractable: true })
      return importJWK(await exportJWK(pair.privateKey), "ES256")
    })
    const now = Math.floor(Date.now() / 1000)
    const forged = yield* Effect.forEach(
      Array.from({ length: 1000 }, (_, i) => i),
      (i) =>
        Effect.promise(() =>
          new SignJWT({ sub: "mallory" })
            .setProtectedHeader({ alg: "ES256", kid: `made-up-${i}` })
            .setIssuer(provider.issuer)
            .setAudience(CLIENT_ID)
            .setIssuedAt(now)
            .setExpirationTime(now + 600)
            .sign(forger),
        ),
    )
    const peers = forged.map(() => PeerKey.generate())
    const readsSeries = `mesh_control_plane_oidc_keys_reads_total{issuer="${provider.issuer}",outcome="ok",reason="token"}`
    const readsBefore = yield* provider.jwksReads
    const countedBefore = yield* metric(readsSeries)
    const started = Date.now()
    const answers = yield* Effect.forEach(forged, (token, i) => register(token, peers[i]), { concurrency: "unbounded" })
    const seconds = (Date.now() - started) / 1000
    const reads = (yield* provider.jwksReads) - readsBefore
    console.log(`${forged.length} unknown key ids against /register in ${seconds.toFixed(2)} s: ${reads} key-set reads`)
    const counted = (yield* metric(readsSeries)) - countedBefore
    expect(answers.every((a) => a.status === 401 && a.message === NOT_RECOGNISED)).toBe(true)
    // What the bucket allows: a burst, then one a second.
    expect(reads).toBeLessThanOrEqual(KeySchedule.READ_BURST + Math.ceil(seconds))

    // Right after, the provider rotates: a new key signs, the old one is still published.
    yield* provider.start([yield* OidcProvider.newKey("second"), first])
    const rotated = yield* provider.idToken("alice")
    expect(yield* register(rotated)).toEqual({ status: 200, message: "" })
    // The user API (and so the console's pages) verify through the same keys.
    expect(yield* userStatus(rotated)).toBe(200)
    // The control plane counts the reads the provider served.
    expect(counted).toBe(reads)
  }),
)

it.scopedLive("the provider down for a while: known keys still verify, readiness and logs say the keys are stale", () =>
  Effect.gen(function* () {
    const { provider, first, cp, register, userStatus, ready, logged } = yield* setup(MAX_AGE)
    const token = yield* provider.idToken("alice")
    expect(yield* register(token)).toEqual({ status: 200, message: "" })
    const [, fresh] = yield* ready
    expect(fresh).toMatchObject({
      status: "ready",
      issuer_keys: [{ issuer: provider.issuer, keys: "fresh", problem: null }],
    })

    yield* provider.stop
    const [status, down] = yield* eventually(ready, ([, body]) => body.issuer_keys[0]?.keys === "stale", {
      what: "stale keys on /readyz",
    })
    // Still ready: the keys held verify tokens, and every replica would say the same.
    expect(status).toBe(200)
    expect(down.issuer_keys[0]?.read_at).not.toBeNull()
    expect(down.issuer_keys[0]?.problem).toMatch(/connection/)
    expect(logged().some((l) => l.startsWith("WARN") && l.includes("the key set is stale"))).toBe(true)
    // Past the max age too, a token under a known key verifies.
    yield* Effect.sleep(MAX_AGE)
    expect(yield* register(token)).toEqual({ status: 200, message: "" })
    expect(yield* userStatus(token)).toBe(200)
    expect((yield* cp.api.public.healthz()).status).toBe("ok")

    yield* provider.start([first])
    const [, back] = yield* eventually(ready, ([, body]) => body.issuer_keys[0]?.keys === "fresh", {
      what: "fresh keys on /readyz",
    })
    expect(back.issuer_keys[0]?.problem).toBeNull()
    expect(logged().some((l) => l.startsWith("INFO") && l.includes("no longer stale"))).toBe(true)
  }),
)
