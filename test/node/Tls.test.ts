import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { request } from "node:https"
import { join } from "node:path"
import { connect } from "node:tls"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"

const openssl = (dir: string, args: ReadonlyArray<string>) =>
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] })

/** A CA and a certificate it signed (`name.pem`, `name.key`), made with the openssl command line. */
const authority = (dir: string, ca: string) =>
  openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-days",
    "1",
    "-subj",
    `/CN=${ca}`,
    "-keyout",
    `${ca}.key`,
    "-out",
    `${ca}.pem`,
  ])

const issue = (dir: string, ca: string, name: string, san: string) => {
  openssl(dir, [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-subj",
    `/CN=${name}`,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
  ])
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`)
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.pem`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-days",
    "1",
    "-out",
    `${name}.pem`,
    "-extfile",
    `${name}.ext`,
  ])
  return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) }
}

/** GET over TLS, trusting `ca`, presenting the client certificate when given; the status, or the error's code. */
const get = (
  url: string,
  path: string,
  ca: string,
  client?: { cert: string; key: string },
  headers: Record<string, string> = {},
) =>
  Effect.promise(
    () =>
      new Promise<{ status: number; body: string } | { error: string }>((resolve) => {
        const req = request(`${url}${path}`, {
          headers,
          ca: readFileSync(ca),
          ...(client === undefined ? {} : { cert: readFileSync(client.cert), key: readFileSync(client.key) }),
        })
        req.on("response", (res) => {
          let body = ""
          res.on("data", (chunk) => {
            body += chunk
          })
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
          res.on("error", (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }))
        })
        req.on("error", (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }))
        req.end()
      }),
  )

/**
 * A TLS 1.3 connection that sends nothing and waits for the server's verdict on its certificate: the error code of the
 * alert the server sends; "closed" when the server, trusted by this client, closed the connection after the handshake
 * without a word (Node checks a presented certificate only then); "open" if it kept the connection. An HTTP request
 * written at once would race that verdict and end as a plain reset.
 */
const handshake = (port: number, ca: string, client?: { cert: string; key: string }) =>
  Effect.async<string>((resume) => {
    const socket = connect({
      host: "127.0.0.1",
      port,
      ca: readFileSync(ca),
      ...(client === undefined ? {} : { cert: readFileSync(client.cert), key: readFileSync(client.key) }),
    })
    let trusted = false
    socket.on("secureConnect", () => {
      trusted = true
    })
    socket.on("error", (error: NodeJS.ErrnoException) => resume(Effect.succeed(error.code ?? error.message)))
    socket.on("close", () => resume(Effect.succeed(trusted ? "closed" : "closed in the handshake")))
    const keptOpen = setTimeout(() => resume(Effect.succeed("open")), 20_000)
    return Effect.sync(() => {
      clearTimeout(keptOpen)
      socket.destroy()
    })
  })

describe("local API over mTLS", () => {
  it.live(
    "a client certificate signed by --tls-ca replaces the token and may read evidence; others cannot connect",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* NodeHarness.tempDir
          authority(dir, "ca")
          authority(dir, "other-ca")
          const server = issue(dir, "ca", "server", "IP:127.0.0.1")
          const client = issue(dir, "ca", "client", "DNS:client")
          const stranger = issue(dir, "other-ca", "stranger", "DNS:stranger")
          const cp = yield* Harness.make({ autoApproveEnrollment: true })
          yield* RouterHarness.make(cp)
          const node = yield* NodeHarness.make(cp, {
            overrides: {
              tls: Option.some({
                certPath: server.cert,
                keyPath: server.key,
                caPath: Option.some(join(dir, "ca.pem")),
              }),
            },
          })
          yield* node.connected
          const url = node.url.replace("http://", "https://")
          const ca = join(dir, "ca.pem")

          const ok = yield* get(url, "/debug/mesh-info", ca, client)
          expect(ok).toMatchObject({ status: 200 })
          const evidence = yield* get(url, "/mesh/identity", ca, client)
          expect(evidence).toMatchObject({ status: 200 })
          expect(JSON.parse((evidence as { body: string }).body).peer_id).toBe(yield* node.peerId)

          // The node refuses these clients by the TLS alert that names why; any other failure (a server certificate
          // the client does not trust, a node not listening) is not this refusal.
          const port = Number(new URL(url).port)
          expect(yield* handshake(port, ca)).toBe("ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED")
          expect(yield* handshake(port, ca, stranger)).toBe("closed")
        }),
      ),
  )

  it.live("TLS without --tls-ca: the token is still needed, and identity evidence is refused with it", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* NodeHarness.tempDir
        authority(dir, "ca")
        const server = issue(dir, "ca", "server", "IP:127.0.0.1")
        const client = issue(dir, "ca", "client", "DNS:client")
        const cp = yield* Harness.make({ autoApproveEnrollment: true })
        const router = yield* RouterHarness.make(cp)
        const node = yield* NodeHarness.make(cp, {
          overrides: { tls: Option.some({ certPath: server.cert, keyPath: server.key, caPath: Option.none() }) },
        })
        yield* node.connected
        const url = node.url.replace("http://", "https://")
        const ca = join(dir, "ca.pem")
        const token = { "x-mesh-authentication": `Bearer ${node.apiToken}` }

        expect(yield* get(url, "/debug/mesh-info", ca, undefined, token)).toMatchObject({ status: 200 })
        // A client certificate is no credential here: nothing asked for it, nothing checked it.
        expect(yield* get(url, "/debug/mesh-info", ca, client)).toMatchObject({ status: 401 })
        for (const path of ["/mesh/identity", `/mesh/peer/${router.peerId}/evidence`]) {
          for (const presented of [undefined, client]) {
            const refused = yield* get(url, path, ca, presented, token)
            expect([path, refused]).toMatchObject([path, { status: 403 }])
            expect(JSON.parse((refused as { body: string }).body).error).toBe("strong_transport_required")
          }
        }
      }),
    ),
  )
})
