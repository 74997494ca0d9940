/**
 * Client-side helpers for tests that load or break a running control plane: requests whose failure (refused
 * connection, reset, no answer in time) is an outcome to record rather than a crash of the test, bounded polls, and
 * the operator calls these tests make.
 */
import { Cause, Duration, Effect, Option } from "effect"
import * as MeshClient from "../../src/testing/MeshClient.js"

export type Outcome<A> =
  | { readonly _tag: "answer"; readonly value: A; readonly ms: number }
  | { readonly _tag: "timeout"; readonly ms: number }
  | { readonly _tag: "failed"; readonly reason: string; readonly ms: number }

const reasonOf = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const cause = (error as { cause?: unknown }).cause
  return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message
}

/**
 * Runs a request, recording how it ended: an answer, no answer within `timeout`, or a transport failure (the
 * MeshClient requests die when fetch rejects, as when the server is down or was killed mid-request).
 */
export const attempt = <A>(
  request: Effect.Effect<A>,
  timeout: Duration.DurationInput = Duration.seconds(10),
): Effect.Effect<Outcome<A>> =>
  Effect.suspend(() => {
    const started = Date.now()
    const ms = () => Date.now() - started
    return request.pipe(
      Effect.timeout(timeout),
      Effect.map((value): Outcome<A> => ({ _tag: "answer", value, ms: ms() })),
      Effect.catchAllCause((cause) =>
        Effect.succeed<Outcome<A>>(
          Option.isSome(Cause.failureOption(cause))
            ? { _tag: "timeout", ms: ms() }
            : { _tag: "failed", reason: reasonOf(Cause.squash(cause)), ms: ms() },
        ),
      ),
    )
  })

/** Repeats `effect` every `interval` until `predicate` holds, failing with the last value after `timeout`. */
export const poll = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  predicate: (a: A) => boolean,
  options: {
    readonly what: string
    readonly timeout: Duration.DurationInput
    readonly interval?: Duration.DurationInput
  },
): Effect.Effect<A, E | Error, R> =>
  Effect.gen(function* () {
    const deadline = Date.now() + Duration.toMillis(options.timeout)
    for (;;) {
      const value = yield* effect
      if (predicate(value)) return value
      if (Date.now() > deadline) {
        const shown = JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v))
        return yield* Effect.fail(
          new Error(`not reached within ${Duration.format(options.timeout)}: ${options.what}
last seen: ${shown?.slice(0, 2_000)}`),
        )
      }
      yield* Effect.sleep(options.interval ?? Duration.millis(50))
    }
  })

export interface Endpoint {
  readonly url: string
  readonly adminToken: string
}

/** An operator call to the JSON API. */
export const admin = (cp: Endpoint, method: string, path: string, body?: unknown) =>
  MeshClient.json(cp.url, method, path, cp.adminToken, body)

export interface MintedToken {
  readonly id: string
  readonly token: string
  readonly max_usages: number
}

export const mintToken = (cp: Endpoint, body: Record<string, unknown> = {}) =>
  Effect.flatMap(admin(cp, "POST", "/admin/bootstrap-tokens", { role: "mesh:role:node", ...body }), (answer) =>
    answer.status === 201
      ? Effect.succeed(answer.json as MintedToken)
      : Effect.dieMessage(`mint failed: ${answer.status} ${JSON.stringify(answer.json)}`),
  )

/** The text of an answer's body, for assertions on error bodies. */
export const text = (answer: MeshClient.Answer): string => new TextDecoder().decode(answer.body)

/** The JSON error body of an answer, or undefined when the body is not one. */
export const errorBody = (
  answer: MeshClient.Answer,
): { readonly error: string; readonly message: string } | undefined => {
  try {
    const parsed = JSON.parse(text(answer)) as unknown
    return typeof parsed === "object" && parsed !== null && "error" in parsed && "message" in parsed
      ? (parsed as { error: string; message: string })
      : undefined
  } catch {
    return undefined
  }
}
