/**
 * Listening for the demo servers: a node:http server (with the listener rules every server of ours has) on 127.0.0.1,
 * drained when the scope closes. A port already taken fails with AddressInUse, so mesh-one can name the flag to change.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Data, Duration, Effect, type Scope } from "effect"
import * as Listener from "../http/Listener.js"

export class AddressInUse extends Data.TaggedError("AddressInUse")<{ readonly port: number }> {}

/** Serves `handler` on 127.0.0.1:`port` (0: any free port) for the life of the scope; the port it got. */
export const listen = (
  port: number,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Effect.Effect<number, AddressInUse, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<ReturnType<typeof Listener.makeServer>, AddressInUse>((resume) => {
      const server = Listener.makeServer(Listener.defaults)
      server.on("request", handler)
      server.once("error", (error: Error & { readonly code?: string }) =>
        resume(error.code === "EADDRINUSE" ? Effect.fail(new AddressInUse({ port })) : Effect.die(error)),
      )
      server.listen(port, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Listener.drain(server, Duration.seconds(1)),
  ).pipe(
    Effect.map((server) => {
      const address = server.address()
      return typeof address === "object" && address !== null ? address.port : port
    }),
  )
