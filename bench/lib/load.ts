/**
 * A closed-loop load generator: `concurrency` workers each send one request at a time over keep-alive connections
 * for `seconds`, recording every latency. Any failed request or unexpected status counts as an error.
 */
import { Agent, request } from "node:http"
import { performance } from "node:perf_hooks"

export interface LoadOptions {
  readonly url: string
  readonly method?: string
  readonly headers?: Record<string, string>
  /** A fixed body, or a function giving each request its own (for requests that must differ, like challenges). */
  readonly body?: Uint8Array | string | (() => Promise<Uint8Array | string> | Uint8Array | string)
  /** Per-request headers computed just before sending. */
  readonly headersFor?: () => Promise<Record<string, string>> | Record<string, string>
  readonly expectStatus?: number
  readonly concurrency: number
  readonly seconds: number
  readonly warmupSeconds?: number
  /** Called with each successful response body, e.g. to carry state between requests. */
  readonly onResponse?: (body: Buffer) => void
}

export interface LoadResult {
  readonly requests: number
  readonly errors: number
  readonly firstError?: string
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** Every measured latency, ascending, for pooling runs made side by side. */
  readonly latencies: ReadonlyArray<number>
}

export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN)

const once = (agent: Agent, url: URL, options: LoadOptions): Promise<{ status: number; body: Buffer }> =>
  Promise.resolve(typeof options.body === "function" ? options.body() : options.body).then(async (body) => {
    const extra = options.headersFor === undefined ? {} : await options.headersFor()
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        { method: options.method ?? "GET", agent, headers: { ...options.headers, ...extra } },
        (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }))
          res.on("error", reject)
        },
      )
      req.on("error", reject)
      req.end(body)
    })
  })

export const run = async (options: LoadOptions): Promise<LoadResult> => {
  const url = new URL(options.url)
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency })
  const expected = options.expectStatus ?? 200
  const latencies: Array<number> = []
  let errors = 0
  let firstError: string | undefined
  let measuring = false
  const warmupEnd = performance.now() + (options.warmupSeconds ?? 1) * 1000
  const end = warmupEnd + options.seconds * 1000
  const worker = async () => {
    while (performance.now() < end) {
      const started = performance.now()
      measuring = started >= warmupEnd
      try {
        const res = await once(agent, url, options)
        if (res.status !== expected) {
          errors++
          firstError ??= `status ${res.status}: ${res.body.toString("utf8").slice(0, 200)}`
        } else {
          options.onResponse?.(res.body)
          if (measuring) latencies.push(performance.now() - started)
        }
      } catch (error) {
        errors++
        firstError ??= (error as Error).message
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, worker))
  agent.destroy()
  latencies.sort((a, b) => a - b)
  return {
    requests: latencies.length,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    rps: latencies.length / options.seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    latencies,
  }
}
