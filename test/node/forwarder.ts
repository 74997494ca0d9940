/** A loopback forwarder adding a node's API token, for MCP clients that cannot send headers of their own. */
import { createServer, request } from "node:http"
import { Effect } from "effect"

/** A loopback HTTP server passing every request to `target` with the node's API token added; stopped with the scope. */
export const tokenForwarder = (target: URL, apiToken: string) =>
  Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer((req, res) => {
        const upstream = request(
          {
            hostname: target.hostname,
            port: target.port,
            method: req.method,
            path: req.url,
            headers: { ...req.headers, "x-mesh-authentication": `Bearer ${apiToken}` },
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(res)
          },
        )
        upstream.on("error", () => res.destroy())
        res.on("close", () => upstream.destroy())
        req.pipe(upstream)
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      }),
  )
