/**
 * A TCP forwarder on a loopback port of its own, held for the whole test: clients keep one address while the process
 * behind it is killed and another one starts on whatever port the OS gives it. Restarting on the killed process's
 * port instead would race every other process on the machine for that port once it is released.
 */
import { createConnection, createServer, type Socket } from "node:net"
import { Effect, type Scope } from "effect"

export interface Forwarder {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** Sends new connections to this port from now on; connections to the previous target are cut. */
  readonly target: (port: number) => Effect.Effect<void>
}

export const make = (initialTarget: number): Effect.Effect<Forwarder, Error, Scope.Scope> =>
  Effect.gen(function* () {
    let target = initialTarget
    const open = new Set<Socket>()
    const server = createServer((client) => {
      const upstream = createConnection({ host: "127.0.0.1", port: target })
      open.add(client)
      open.add(upstream)
      // Either side closing or failing ends both: the client sees the cut (or refusal) the process behind caused.
      const cut = () => {
        open.delete(client)
        open.delete(upstream)
        client.destroy()
        upstream.destroy()
      }
      client.on("error", cut).on("close", cut)
      upstream.on("error", cut).on("close", cut)
      client.pipe(upstream).pipe(client)
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number, Error>((resume) => {
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
        })
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const socket of open) socket.destroy()
          server.close(() => resume(Effect.void))
        }),
    )
    return {
      url: `http://127.0.0.1:${port}`,
      target: (next) =>
        Effect.sync(() => {
          target = next
          for (const socket of open) socket.destroy()
          open.clear()
        }),
    }
  })
