/**
 * Separate hosts on one machine, made of Linux network namespaces (root only): a "segment" namespace holding the
 * addresses of the control plane and the routers (SEGMENT.cp, .routers), and one namespace per node, each on its own
 * subnet behind a veth pair to the segment. The segment does not forward between subnets, and a node knows no route
 * to another node's subnet: nodes reach each other only through a router's relay until `openDirectRoutes`. The test
 * process reaches the segment over one more veth pair. Everything is made by `make` and removed when its scope ends.
 */
import { execFileSync } from "node:child_process"
import { Effect, type Scope } from "effect"

const PREFIX = "10.213"
export const SEGMENT = { cp: `${PREFIX}.0.1`, routers: [`${PREFIX}.0.2`, `${PREFIX}.0.3`] } as const

export interface Host {
  readonly name: string
  /** The namespace's address on its subnet. */
  readonly address: string
  /** Runs a process on this host. */
  readonly prefix: ReadonlyArray<string>
}

export interface Hosts {
  readonly segment: { readonly prefix: ReadonlyArray<string> }
  readonly nodes: ReadonlyArray<Host>
  /** Lets the segment forward between the node subnets and gives every node a route to the others. */
  readonly openDirectRoutes: Effect.Effect<void>
}

const ip = (...args: Array<string>) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] })

/** Why namespaces cannot be made here, or undefined when they can. */
export const unavailable = (): string | undefined => {
  if (process.platform !== "linux") return "network namespaces need Linux"
  if (process.getuid?.() !== 0) return "network namespaces need root"
  try {
    execFileSync("ip", ["netns", "list"], { stdio: "ignore" })
    return undefined
  } catch {
    return "the ip command (iproute2) is missing"
  }
}

export const make = (nodeCount: number): Effect.Effect<Hosts, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const tag = (process.pid % 0xffff).toString(16)
        const segment = `mesh-seg-${tag}`
        const nodes = Array.from({ length: nodeCount }, (_, i) => `mesh-n${i + 1}-${tag}`)
        const made: Array<string> = []
        try {
          ip("netns", "add", segment)
          made.push(segment)
          ip("-n", segment, "link", "set", "lo", "up")
          // The segment's own addresses sit on its loopback (no dummy device module needed), one /32 each.
          for (const address of [SEGMENT.cp, ...SEGMENT.routers]) {
            ip("-n", segment, "addr", "add", `${address}/32`, "dev", "lo")
          }
          // The test process's way in.
          ip("link", "add", `mt${tag}`, "type", "veth", "peer", "name", "up0", "netns", segment)
          ip("addr", "add", `${PREFIX}.250.1/30`, "dev", `mt${tag}`)
          ip("link", "set", `mt${tag}`, "up")
          ip("-n", segment, "addr", "add", `${PREFIX}.250.2/30`, "dev", "up0")
          ip("-n", segment, "link", "set", "up0", "up")
          ip("route", "add", `${PREFIX}.0.0/24`, "via", `${PREFIX}.250.2`)
          nodes.forEach((ns, i) => {
            const subnet = `${PREFIX}.${i + 1}`
            ip("netns", "add", ns)
            made.push(ns)
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", `n${i + 1}`, "netns", segment)
            ip("-n", ns, "addr", "add", `${subnet}.2/24`, "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", segment, "addr", "add", `${subnet}.1/24`, "dev", `n${i + 1}`)
            ip("-n", segment, "link", "set", `n${i + 1}`, "up")
            ip("-n", ns, "route", "add", `${PREFIX}.0.0/24`, "via", `${subnet}.1`)
          })
        } catch (error) {
          for (const ns of made) ip("netns", "del", ns)
          try {
            ip("link", "del", `mt${tag}`)
          } catch {}
          throw error
        }
        const exec = (ns: string) => ["ip", "netns", "exec", ns]
        return {
          tag,
          made,
          hosts: {
            segment: { prefix: exec(segment) },
            nodes: nodes.map((ns, i) => ({ name: ns, address: `${PREFIX}.${i + 1}.2`, prefix: exec(ns) })),
            openDirectRoutes: Effect.sync(() => {
              execFileSync("ip", ["netns", "exec", segment, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
              nodes.forEach((ns, i) => {
                nodes.forEach((_, j) => {
                  if (i !== j) ip("-n", ns, "route", "add", `${PREFIX}.${j + 1}.0/24`, "via", `${PREFIX}.${i + 1}.1`)
                })
              })
            }),
          },
        }
      },
      catch: (error) => new Error(`network namespaces could not be made: ${String(error)}`),
    }),
    ({ tag, made }) =>
      Effect.sync(() => {
        for (const ns of made) {
          try {
            ip("netns", "del", ns)
          } catch {}
        }
        try {
          ip("link", "del", `mt${tag}`)
        } catch {}
      }),
  ).pipe(Effect.map(({ hosts }) => hosts))
