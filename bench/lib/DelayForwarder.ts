/**
 * A TCP forwarder on a loopback port that holds every chunk `delayMs` before passing it on, in each direction on its
 * own: a stand-in for a wide-area link (the kernel's `netem` is not available on these machines). Chunks leave in the
 * order they came, each `delayMs` after it was read, so the link adds `2 × delayMs` to a round trip and nothing to
 * throughput; a half-close is delayed like data. Backpressure is not modelled: the benchmark sends small messages.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net"

export interface DelayForwarder {
  readonly port: number
  /** Connections accepted so far: proof that a path went through the link. */
  readonly accepted: () => number
  readonly close: () => Promise<void>
}

/**
 * Writes what `from` sends to `to`, each chunk `delayMs` after it arrived; its end, then its close, travel behind the
 * last chunk.
 */
const TRACE = process.env.BENCH_LINK_TRACE === "1"

const delayed = (from: Socket, to: Socket, delayMs: number, label: string) => {
  const queue: Array<{ due: number; item: Buffer | "end" | "close" }> = []
  let timer: NodeJS.Timeout | undefined
  const drain = () => {
    timer = undefined
    const now = performance.now()
    while (queue.length > 0 && (queue[0]?.due ?? 0) <= now) {
      const next = queue.shift()
      if (next === undefined || to.destroyed) return
      if (next.item === "end") to.end()
      else if (next.item === "close") to.destroy()
      else to.write(next.item)
    }
    schedule()
  }
  const schedule = () => {
    const head = queue[0]
    if (timer === undefined && head !== undefined) timer = setTimeout(drain, Math.max(0, head.due - performance.now()))
  }
  const push = (item: Buffer | "end" | "close") => {
    queue.push({ due: performance.now() + delayMs, item })
    schedule()
  }
  from.on("data", (chunk: Buffer) => {
    if (TRACE) console.error(`link ${performance.now().toFixed(1)} ${label} ${chunk.length}`)
    push(chunk)
  })
  from.on("end", () => push("end"))
  from.on("close", () => push("close"))
}

/** Listens on 127.0.0.1 (a port the OS picks unless `port` is given) and forwards to 127.0.0.1:`target`. */
export const start = (target: number, delayMs: number, port = 0): Promise<DelayForwarder> =>
  new Promise((resolve, reject) => {
    let accepted = 0
    const open = new Set<Socket>()
    const server: Server = createServer((client) => {
      accepted++
      const upstream = createConnection({ host: "127.0.0.1", port: target })
      client.setNoDelay(true)
      upstream.setNoDelay(true)
      for (const socket of [client, upstream]) {
        open.add(socket)
        socket.on("close", () => open.delete(socket))
        socket.on("error", () => socket.destroy())
      }
      delayed(client, upstream, delayMs, `${target}<`)
      delayed(upstream, client, delayMs, `${target}>`)
    })
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => {
      const address = server.address()
      resolve({
        port: typeof address === "object" && address !== null ? address.port : 0,
        accepted: () => accepted,
        close: () =>
          new Promise((done) => {
            for (const socket of open) socket.destroy()
            server.close(() => done())
          }),
      })
    })
  })

export interface LinkProbe {
  /** ms for one byte to cross the link and come back: the link's own round trip, timers' lateness included. */
  readonly roundTrip: () => Promise<number>
  readonly close: () => Promise<void>
}

/**
 * A byte echoed across a forwarder of `delayMs`: what the link really adds to a round trip. Timers fire up to a
 * millisecond late on each leg, more on a busy machine, so the measured figure, not `2 × delayMs`, is the physical
 * limit a path through the link is compared with.
 */
export const probe = async (delayMs: number): Promise<LinkProbe> => {
  const echo = createServer((socket) => {
    socket.setNoDelay(true)
    socket.on("error", () => socket.destroy())
    socket.pipe(socket)
  })
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve))
  const address = echo.address()
  const link = await start(typeof address === "object" && address !== null ? address.port : 0, delayMs)
  const client = createConnection({ host: "127.0.0.1", port: link.port })
  client.setNoDelay(true)
  await new Promise<void>((resolve, reject) => client.once("connect", resolve).once("error", reject))
  return {
    roundTrip: () =>
      new Promise((resolve) => {
        const started = performance.now()
        client.once("data", () => resolve(performance.now() - started))
        client.write("x")
      }),
    close: async () => {
      client.destroy()
      await link.close()
      await new Promise((resolve) => echo.close(resolve))
    },
  }
}
