/**
 * A loopback TCP port nobody listens on right now, for servers a test or benchmark starts in another process.
 *
 * Chosen below the kernel's ephemeral range: a port the OS hands out for `listen(0)` is one it may also give, a moment
 * later, to an outbound connection as its local port, and then the child that was to listen on it cannot (seen in the
 * round-trip benchmark, whose forwarders open connections while the nodes start). Below the range only a listener can
 * take it; the pick is random so that parallel test workers rarely try the same one, and bound once to be sure.
 */
import { randomInt } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer } from "node:net"

const LOWEST = 10_000
const ATTEMPTS = 64

/** The first port of the kernel's ephemeral range (Linux), or the IANA default elsewhere. */
const ephemeralStart = (): number => {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0])
    return Number.isInteger(low) && low > LOWEST + 1000 ? low : 49_152
  } catch {
    return 49_152
  }
}

const tryListen = (port: number): Promise<number | undefined> =>
  new Promise((resolve) => {
    const server = createServer()
    server.once("error", () => resolve(undefined))
    server.listen(port, "127.0.0.1", () => {
      const address = server.address()
      const bound = typeof address === "object" && address !== null ? address.port : undefined
      server.close(() => resolve(bound))
    })
  })

export const freePort = async (): Promise<number> => {
  const below = ephemeralStart()
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const port = await tryListen(randomInt(LOWEST, below))
    if (port !== undefined) return port
  }
  // Every pick was taken: let the OS choose (inside its ephemeral range) rather than fail.
  const port = await tryListen(0)
  if (port === undefined) throw new Error("no free loopback port")
  return port
}
