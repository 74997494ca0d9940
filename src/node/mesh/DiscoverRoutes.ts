/**
 * `GET /mesh/service/discover`: services on other peers, by type and optionally name. The answer is a JSON array of
 * `{peer_id, srv_name, srv_description, labels, local_proxy_url}` (inference rows add a `note`: they are called
 * over HTTP at `local_proxy_url`), collected until the search ends or `timeout`, sorted by peer and name, then paged
 * by `offset` and `limit`. With `stream=true` or `Accept: text/event-stream` each result is one server-sent event
 * as it is found (`offset` and `limit` apply in arrival order), and the stream ends with `event: done`.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Chunk, Duration, Effect, Either, Option, Stream } from "effect"
import { byPeerAndName, hostOf, row } from "../../domain/DiscoveryRow.js"
import { BadRequest } from "../../domain/Errors.js"
import * as GoDuration from "../../domain/GoDuration.js"
import { isServiceName } from "../../domain/NodeFile.js"
import { isServiceType } from "../../domain/ServiceKeys.js"
import { SERVICE_TYPES, type ServiceType } from "../../domain/ServiceType.js"
import * as AgentView from "../../layers/agents/AgentView.js"
import { CurrentAgent } from "../../services/agents/CurrentAgent.js"
import { Discovery } from "../../services/discovery/Discovery.js"
import { inMember } from "../InMember.js"
import * as Route from "../Route.js"

const DEFAULT_LIMIT = 20
const MAX_LIMIT = 1000
const MAX_OFFSET = 1_000_000
const DEFAULT_TIMEOUT = Duration.seconds(10)
const MAX_TIMEOUT = Duration.minutes(5)

interface Query {
  readonly type: ServiceType
  readonly name: string | undefined
  readonly limit: number
  readonly offset: number
  readonly timeout: Duration.Duration
  readonly stream: boolean
}

const bad = (message: string) => Either.left(new BadRequest({ message }))

const count = (text: string | null, what: string, fallback: number, min: number, max: number) => {
  if (text === null) return Either.right(fallback)
  const n = /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN
  return Number.isInteger(n) && n >= min && n <= max
    ? Either.right(n)
    : bad(`${what} must be a whole number from ${min} to ${max}`)
}

const duration = (text: string) => {
  const parsed = GoDuration.parse(text)
  return Either.isRight(parsed) &&
    Duration.greaterThan(parsed.right, Duration.zero) &&
    Duration.lessThanOrEqualTo(parsed.right, MAX_TIMEOUT)
    ? Either.right(parsed.right)
    : bad("timeout must be a duration such as 10s, more than 0 and at most 5m")
}

const parse = (url: string, accept: string | undefined): Either.Either<Query, BadRequest> =>
  Either.gen(function* () {
    const params = new URL(url, "http://local").searchParams
    const type = params.get("type")
    if (type === null || !isServiceType(type)) {
      return yield* bad(`type is required: one of ${SERVICE_TYPES.join(", ")}`)
    }
    const nameText = params.get("name")
    const name = nameText === null || nameText === "" ? undefined : nameText
    if (name !== undefined && !isServiceName(name)) {
      return yield* bad("name must be 1-64 letters, digits, '.', '_' or '-'")
    }
    const limit = yield* count(params.get("limit"), "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    const offset = yield* count(params.get("offset"), "offset", 0, 0, MAX_OFFSET)
    const timeoutText = params.get("timeout")
    const timeout = timeoutText === null ? DEFAULT_TIMEOUT : yield* duration(timeoutText)
    const streamText = params.get("stream")
    if (streamText !== null && !["true", "false", "1", "0"].includes(streamText)) {
      return yield* bad("stream must be true or false")
    }
    const stream = streamText === "true" || streamText === "1" || (accept ?? "").includes("text/event-stream")
    return { type, name, limit, offset, timeout, stream }
  })

const encoder = new TextEncoder()
const event = (text: string) => encoder.encode(text)

const discover = inMember(
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = yield* parse(request.url, request.headers.accept)
    const discovery = yield* Discovery
    const host = hostOf(request.headers.host)
    // An agent finds only the services its scope reaches.
    const agent = yield* Effect.serviceOption(CurrentAgent)
    const found = discovery
      .find({
        type: query.type,
        ...(query.name === undefined ? {} : { name: query.name }),
        timeout: query.timeout,
      })
      .pipe(
        Stream.filter(
          (service) => Option.isNone(agent) || AgentView.serviceVisible(agent.value.scope, service.type, service.name),
        ),
      )
    if (query.stream) {
      const events = found.pipe(
        Stream.drop(query.offset),
        Stream.take(query.limit),
        Stream.map((service) => event(`data: ${JSON.stringify(row(service, host))}\n\n`)),
        Stream.concat(Stream.make(event("event: done\ndata: {}\n\n"))),
      )
      return HttpServerResponse.stream(events, {
        contentType: "text/event-stream",
        headers: { "cache-control": "no-store" },
      })
    }
    const all = Chunk.toReadonlyArray(yield* Stream.runCollect(found))
    const page = [...all].sort(byPeerAndName).slice(query.offset, query.offset + query.limit)
    return HttpServerResponse.unsafeJson(
      page.map((service) => row(service, host)),
      { headers: { "cache-control": "no-store" } },
    )
  }),
)

export const routes = [
  Route.make({
    methods: ["GET"],
    path: "/mesh/service/discover",
    label: "discover",
    access: "token",
    availability: "connected",
    handler: discover,
  }),
]
