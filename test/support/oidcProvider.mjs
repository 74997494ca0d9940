/**
 * A certified OpenID provider (`oidc-provider` from npm) as a child process, for tests of the control plane's issuer
 * keys. It signs with the private JWKs it is given (MESH_TEST_OP_KEYS, a JSON array), so a test restarts it publishing
 * another key set; MESH_TEST_OP_ISSUER is its issuer identifier (the address tests reach it at, which may be a
 * forwarder), MESH_TEST_OP_CLIENT the one client it knows (`{"client_id", "redirect_uri"}`: a public client, PKCE),
 * MESH_TEST_OP_JWKS_MAX_AGE (seconds, optional) the `Cache-Control: max-age` of its JWKS.
 *
 * Sign-in needs no person: the interaction page finishes every interaction at once, signed in as the subject the
 * authorization request names in `login_hint`, with the `openid` scope granted. It prints `{"port": N}` once it
 * listens on loopback, and answers `GET /test/jwks-reads` with how many JWKS answers it gave.
 */
import { createServer } from "node:http"
import Provider from "oidc-provider"

const issuer = process.env.MESH_TEST_OP_ISSUER
const keys = JSON.parse(process.env.MESH_TEST_OP_KEYS ?? "[]")
const client = JSON.parse(process.env.MESH_TEST_OP_CLIENT ?? "{}")
const jwksMaxAge = process.env.MESH_TEST_OP_JWKS_MAX_AGE

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: client.client_id,
      redirect_uris: [client.redirect_uri],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code"],
      response_types: ["code"],
      id_token_signed_response_alg: keys[0]?.alg ?? "ES256",
    },
  ],
  jwks: { keys },
  cookies: { keys: ["test-only-cookie-key"] },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
})
// Its own messages about development settings are not the test's business.
provider.on("server_error", (_ctx, error) => console.error(`oidc-provider: ${error.message}`))

if (jwksMaxAge !== undefined) {
  provider.use(async (ctx, next) => {
    await next()
    if (ctx.path === "/jwks") ctx.set("cache-control", `max-age=${jwksMaxAge}`)
  })
}

const finishInteraction = async (req, res) => {
  const { params } = await provider.interactionDetails(req, res)
  const accountId = String(params.login_hint ?? "test-subject")
  const grant = new provider.Grant({ accountId, clientId: String(params.client_id) })
  grant.addOIDCScope("openid")
  const grantId = await grant.save()
  await provider.interactionFinished(
    req,
    res,
    { login: { accountId }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  )
}

const callback = provider.callback()
let jwksReads = 0
const server = createServer((req, res) => {
  if (req.url === "/jwks") jwksReads++
  // The test's own question, beside the provider's routes: how often its keys were read.
  if (req.method === "GET" && req.url === "/test/jwks-reads") {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ reads: jwksReads }))
    return
  }
  if (req.method === "GET" && (req.url ?? "").startsWith("/interaction/")) {
    finishInteraction(req, res).catch((error) => {
      res.writeHead(500, { "content-type": "text/plain" })
      res.end(String(error?.message ?? error))
    })
    return
  }
  callback(req, res)
})
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }))
})
process.on("SIGTERM", () => server.close(() => process.exit(0)))
