import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import * as Listener from "../../src/http/Listener.js"

describe("the shared HTTP listener", () => {
  it("holds a request that arrives before the application's handler is installed, and hands it over", async () => {
    const server = Listener.makeServer(Listener.defaults)
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const { port } = server.address() as AddressInfo
      const answer = fetch(`http://127.0.0.1:${port}/early`).then(async (r) => ({
        status: r.status,
        body: await r.text(),
      }))
      // The request is in before any handler exists.
      await new Promise((resolve) => setTimeout(resolve, 100))
      server.on("request", (req, res) => res.end(`handled ${req.url}`))
      expect(await answer).toEqual({ status: 200, body: "handled /early" })
      const later = await fetch(`http://127.0.0.1:${port}/later`)
      expect(await later.text()).toBe("handled /later")
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
