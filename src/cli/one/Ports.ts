/**
 * mesh-one listens on several fixed ports. Before it starts anything it tries each one, so a port already taken is
 * one line naming the port and the flag that moves it, not a stack from whichever component bound it first.
 */
import { createServer } from "node:net"
import { Data, Effect } from "effect"

export class PortTaken extends Data.TaggedError("PortTaken")<{ readonly message: string }> {}

export interface Wanted {
  readonly port: number
  /** The flag that sets it, without dashes. */
  readonly flag: string
  readonly what: string
}

const message = (wanted: Wanted, why: string) =>
  `port ${wanted.port} (${wanted.what}) ${why}; choose another with --${wanted.flag} <port>`

/** Whether 127.0.0.1:`port` can be bound now: false when something else holds it. */
const free = (port: number) =>
  Effect.async<boolean>((resume) => {
    const server = createServer()
    server.once("error", () => resume(Effect.succeed(false)))
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => server.close(() => resume(Effect.succeed(true))))
  })

/** Fails with the first port (0 is any port, never checked) that is taken or named twice. */
export const check = (ports: ReadonlyArray<Wanted>) => {
  const fixed = ports.filter((p) => p.port !== 0)
  return Effect.forEach(
    fixed,
    (wanted, i) => {
      const earlier = fixed.slice(0, i).find((p) => p.port === wanted.port)
      if (earlier !== undefined) {
        return Effect.fail(new PortTaken({ message: message(wanted, `is also given to --${earlier.flag}`) }))
      }
      return Effect.flatMap(free(wanted.port), (ok) =>
        ok ? Effect.void : Effect.fail(new PortTaken({ message: message(wanted, "is taken") })),
      )
    },
    { discard: true },
  )
}
