/**
 * The node's agents, for its operator (Unix socket or verified mTLS only): `POST /agents/token` mints an agent token
 * from the node's own credential (no control plane needed; `mesh-node agent-token` calls it), `GET /agents/log` reads
 * the call log, filtered by `agent`, `since` and `until` (RFC 3339 or Unix milliseconds) and `limit` (≤ 10000).
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect, Either, Redacted, Schema } from "effect"
import * as AgentScope from "../../domain/AgentScope.js"
import { BadRequest, PayloadTooLarge } from "../../domain/Errors.js"
import * as GoDuration from "../../domain/GoDuration.js"
import * as Body from "../../layers/inference/Body.js"
import { AgentLog } from "../../services/agents/AgentLog.js"
import { Agents } from "../../services/agents/Agents.js"
import { inMember } from "../InMember.js"
import * as Route from "../Route.js"

const MAX_BODY = 64 * 1024
const MAX_LIMIT = 10_000

const MintBody = Schema.Struct({
  ...AgentScope.Request.fields,
  ttl: Schema.optionalWith(Schema.String, { default: () => "1h" }),
})
const decodeMint = Schema.decodeUnknownEither(MintBody, { onExcessProperty: "error" })

const mint = inMember(
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* Body.read(NodeHttpServerRequest.toIncomingMessage(request), MAX_BODY).pipe(
      Effect.mapError((error) =>
        error._tag === "TooLarge"
          ? new PayloadTooLarge({ message: `the request body is larger than ${MAX_BODY} bytes` })
          : new BadRequest({ message: "the request body was cut off" }),
      ),
    )
    const json = Either.try(() => JSON.parse(body.toString("utf8")) as unknown)
    if (Either.isLeft(json)) return yield* new BadRequest({ message: "the request body is not JSON" })
    const decoded = decodeMint(json.right)
    if (Either.isLeft(decoded)) {
      return yield* new BadRequest({ message: `bad agent scope: ${decoded.left.message.split("\n").slice(-1)[0]}` })
    }
    const { ttl, ...scope } = decoded.right
    const duration = GoDuration.parse(ttl)
    if (Either.isLeft(duration)) return yield* new BadRequest({ message: `ttl: ${duration.left}` })
    const minted = yield* (yield* Agents).mint(scope, duration.right)
    const { agent, expiresAtMs, ...granted } = minted.scope
    return yield* HttpServerResponse.json(
      { token: Redacted.value(minted.token), agent, expires_at: new Date(expiresAtMs).toISOString(), scope: granted },
      { headers: { "cache-control": "no-store" } },
    )
  }),
)

const time = (text: string | null): Either.Either<number | undefined, string> => {
  if (text === null || text === "") return Either.right(undefined)
  const n = /^\d+$/.test(text) ? Number(text) : Date.parse(text)
  return Number.isFinite(n) ? Either.right(n) : Either.left(`not a time: ${text.slice(0, 64)}`)
}

const log = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const params = new URL(request.url, "http://local").searchParams
  const agent = params.get("agent") ?? undefined
  if (agent !== undefined && !AgentScope.AGENT_ID.test(agent))
    return yield* new BadRequest({ message: "not an agent id" })
  const since = time(params.get("since"))
  const until = time(params.get("until"))
  if (Either.isLeft(since)) return yield* new BadRequest({ message: `since: ${since.left}` })
  if (Either.isLeft(until)) return yield* new BadRequest({ message: `until: ${until.left}` })
  const limit = Number(params.get("limit") ?? "1000")
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    return yield* new BadRequest({ message: `limit must be a whole number from 1 to ${MAX_LIMIT}` })
  }
  const entries = yield* (yield* AgentLog).read({
    limit,
    ...(agent === undefined ? {} : { agent }),
    ...(since.right === undefined ? {} : { sinceMs: since.right }),
    ...(until.right === undefined ? {} : { untilMs: until.right }),
  })
  return yield* HttpServerResponse.json({ entries }, { headers: { "cache-control": "no-store" } })
})

export const routes = [
  Route.make({
    methods: ["POST"],
    path: "/agents/token",
    label: "agents_token",
    access: "strong",
    availability: "member",
    handler: mint,
  }),
  Route.make({
    methods: ["GET"],
    path: "/agents/log",
    label: "agents_log",
    access: "strong",
    availability: "always",
    handler: log,
  }),
]
