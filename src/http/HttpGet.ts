/**
 * GET a small JSON document over node:http / node:https: the control plane's outbound HTTP (OIDC discovery and JWKS,
 * and the one form POST of the console's sign-in code exchange). Our own client rather than global fetch so TLS
 * verification can be switched off (`--insecure-skip-tls-verify`) and the body is capped while it streams in. The
 * timeout runs on Effect's Clock, like every other deadline.
 */
import * as http from "node:http"
import * as https from "node:https"
import { Data, Duration, Effect } from "effect"

/** Why a request failed; `reason` is short and safe to show (no body, no headers); `status` when one was answered. */
export class HttpGetError extends Data.TaggedError("HttpGetError")<{
  readonly reason: string
  readonly status?: number
}> {}

export interface Options {
  readonly insecureSkipTlsVerify?: boolean
  /** Default 5 s, connect to last byte. */
  readonly timeout?: Duration.DurationInput
  /** Default 1 MiB. */
  readonly maxBytes?: number
}

const fail = (reason: string) => Effect.fail(new HttpGetError({ reason }))

/** A form body to POST instead of a GET. */
type Form = Readonly<Record<string, string>>

/** A 200 answer: its body, and the headers that say how long it may be kept. */
interface Answer<A> {
  readonly body: A
  readonly cacheControl: string | undefined
  readonly age: string | undefined
}

const getText = (target: URL, insecureSkipTlsVerify: boolean, maxBytes: number, form: Form | undefined) =>
  Effect.async<Answer<string>, HttpGetError>((resume) => {
    // Node may report one failure twice (a destroyed request also errors); only the first answer counts.
    let done = false
    const finish = (result: Effect.Effect<Answer<string>, HttpGetError>) => {
      if (done) return
      done = true
      resume(result)
    }
    const onResponse = (res: http.IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume()
        return finish(
          Effect.fail(
            new HttpGetError({
              reason: `HTTP status ${res.statusCode ?? "unknown"}`,
              ...(res.statusCode === undefined ? {} : { status: res.statusCode }),
            }),
          ),
        )
      }
      if (Number(res.headers["content-length"] ?? 0) > maxBytes) {
        req.destroy()
        return finish(fail("response larger than allowed"))
      }
      const chunks: Array<Buffer> = []
      let size = 0
      res.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > maxBytes) {
          req.destroy()
          finish(fail("response larger than allowed"))
        } else chunks.push(chunk)
      })
      res.on("end", () =>
        finish(
          Effect.succeed({
            body: Buffer.concat(chunks).toString("utf8"),
            cacheControl: res.headers["cache-control"],
            age: typeof res.headers.age === "string" ? res.headers.age : undefined,
          }),
        ),
      )
      res.on("error", () => finish(fail("connection lost")))
    }
    const body = form === undefined ? undefined : new URLSearchParams(form).toString()
    const headers: Record<string, string> = { accept: "application/json" }
    if (body !== undefined) {
      headers["content-type"] = "application/x-www-form-urlencoded"
      headers["content-length"] = String(Buffer.byteLength(body))
    }
    const options = { method: body === undefined ? "GET" : "POST", headers }
    const req =
      target.protocol === "https:"
        ? https.request(target, { ...options, rejectUnauthorized: !insecureSkipTlsVerify }, onResponse)
        : http.request(target, options, onResponse)
    req.on("error", (error: NodeJS.ErrnoException) =>
      finish(fail(`connection failed${error.code === undefined ? "" : ` (${error.code})`}`)),
    )
    req.end(body)
    // Interrupted (the timeout, or the caller went away): drop the socket.
    return Effect.sync(() => req.destroy())
  })

/** GETs `url` and parses the 200 answer as JSON; anything else is an `HttpGetError`. */
export const getJson = (url: string, options: Options = {}): Effect.Effect<unknown, HttpGetError> =>
  Effect.map(requestJson(url, undefined, options), (answer) => answer.body)

/** As getJson, with the answer's `Cache-Control` and `Age` (the issuer's keys may be kept as long as they say). */
export const getJsonAnswer = (url: string, options: Options = {}): Effect.Effect<Answer<unknown>, HttpGetError> =>
  requestJson(url, undefined, options)

/** POSTs `form` (urlencoded) to `url` and parses the 200 answer as JSON; anything else is an `HttpGetError`. */
export const postForm = (url: string, form: Form, options: Options = {}): Effect.Effect<unknown, HttpGetError> =>
  Effect.map(requestJson(url, form, options), (answer) => answer.body)

const requestJson = (
  url: string,
  form: Form | undefined,
  options: Options,
): Effect.Effect<Answer<unknown>, HttpGetError> =>
  Effect.gen(function* () {
    const target = URL.canParse(url) ? new URL(url) : undefined
    if (target === undefined || (target.protocol !== "http:" && target.protocol !== "https:")) {
      return yield* fail("not an http(s) URL")
    }
    const answer = yield* getText(
      target,
      options.insecureSkipTlsVerify ?? false,
      options.maxBytes ?? 1024 * 1024,
      form,
    ).pipe(
      Effect.timeoutFail({
        duration: options.timeout ?? Duration.seconds(5),
        onTimeout: () => new HttpGetError({ reason: "timed out" }),
      }),
    )
    const body = yield* Effect.try({
      try: (): unknown => JSON.parse(answer.body),
      catch: () => new HttpGetError({ reason: "response is not JSON" }),
    })
    return { ...answer, body }
  })
