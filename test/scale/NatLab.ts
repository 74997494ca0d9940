/**
 * The NAT lab (issue 51): members in homes behind NATs, made of Linux network namespaces and nftables (root only).
 *
 *   test process ──veth── public ──veth── nat-1 (masquerade) ──veth── home-1 (members)
 *                          │      └─veth── nat-2 (masquerade fully-random) ──veth── home-2 (members) …
 *                          └ control plane, router 1, router 2
 *
 * - `public` is the internet: it forwards between the NATs' WAN addresses, holds the routers' libp2p addresses and
 *   the control plane, and silently drops anything sent to a private range (as the internet does: a dial to a
 *   member's private address stalls until it times out, it is not refused).
 * - Each NAT masquerades its home behind its WAN address and drops unsolicited inbound traffic (its forward and input
 *   chains accept only established and related packets from outside). `cone` is plain masquerade, which keeps a
 *   connection's source port where it can (an endpoint-independent mapping, what hole punching needs); `symmetric`
 *   is masquerade with fully random ports, a new port for every connection (hole punching cannot guess it).
 * - Each home has one private subnet (192.168.<n>.0/24), and every member in it a default route through its NAT.
 *
 * Addresses the members see as public come from 11.0.0.0/8, which libp2p does not count as private (10/8 and the
 * documentation ranges it does, so AutoNAT and DCUtR would ignore them); no route outside the lab reaches them, and
 * nothing in the lab routes to the machine's own network. The test process reaches only the control plane and the
 * routers' metrics, on a 10.x block of its own (`lab.access`), claimed per lab by adding its route (which fails when
 * another lab on the machine holds it), so several labs can run at once.
 *
 * Everything is made by `make` and removed when its scope ends (namespaces, and with them their links and nftables
 * tables); labs left behind by a process that died are removed by the next `make`.
 */
import { execFileSync } from "node:child_process"
import { Effect, type Scope } from "effect"
import { freePort } from "../../src/testing/Ports.js"
import type { ControlPlaneProcess } from "./ControlPlaneProcess.js"
import * as Topology from "./Topology.js"

export type NatKind = "cone" | "symmetric"

/** The public segment's own addresses, the same in every lab (they live only inside its namespaces). */
export const PUBLIC = { routers: ["11.0.0.2", "11.0.0.3"] } as const

export interface Nat {
  readonly kind: NatKind
  /** The namespace's name (for `ip netns exec`, `nft`). */
  readonly namespace: string
  /** The address the home's connections leave from, as the public segment sees it. */
  readonly wan: string
}

export interface Home {
  readonly index: number
  readonly namespace: string
  /** Members' private address (every member of a home shares it, on ports of their own). */
  readonly address: string
  /** Runs a process in the home. */
  readonly prefix: ReadonlyArray<string>
  readonly nat: Nat
  /** A libp2p listen address in the home; port 0: one the OS picks. */
  readonly listen: (port?: number) => string
}

export interface Lab {
  readonly public: {
    readonly namespace: string
    readonly prefix: ReadonlyArray<string>
    /** The control plane's address (reached by the test process and by members through their NAT). */
    readonly controlPlane: string
    /** Routers' libp2p addresses (public). */
    readonly routers: ReadonlyArray<string>
    /** Routers' metrics addresses (reached by the test process). */
    readonly routerMetrics: ReadonlyArray<string>
  }
  readonly homes: ReadonlyArray<Home>
  /** Runs a command in a namespace of this lab and returns its standard output (for hooks: nft counters, conntrack). */
  readonly exec: (namespace: string, args: ReadonlyArray<string>) => Effect.Effect<string, Error>
}

const run = (command: string, args: ReadonlyArray<string>, input?: string): string =>
  execFileSync(command, args, {
    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    ...(input === undefined ? {} : { input }),
  }).toString("utf8")
const ip = (...args: Array<string>) => run("ip", args)
const inNs = (ns: string, command: string, args: ReadonlyArray<string>, input?: string) =>
  run("ip", ["netns", "exec", ns, command, ...args], input)

/** The NAT's rules: masquerade out of `wan`, nothing in but replies. */
const natRules = (kind: NatKind) => `
table ip natlab {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "wan" masquerade${kind === "symmetric" ? " fully-random" : ""}
  }
  chain forward {
    type filter hook forward priority filter; policy drop;
    ct state established,related accept
    iifname "lan" oifname "wan" accept
  }
  chain input {
    type filter hook input priority filter; policy drop;
    ct state established,related accept
    iifname { "lo", "lan" } accept
  }
}
`

/**
 * The lab's public addresses are real internet ones: while a lab is up, the machine itself sends nothing there (a
 * blackhole route per lab, told apart by its metric), so no process outside the lab can reach out by mistake.
 */
const LAB_PUBLIC = "11.0.0.0/16"

/** Private ranges the public segment drops without an answer (blackhole routes send no ICMP for forwarded packets). */
const DROPPED = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]

const NAME = /^nl([0-9a-f]+)x[0-9]+-/

/** Why the lab cannot be made here, or undefined when it can: Linux, root, iproute2 and nftables with NAT support. */
export const unavailable = (): string | undefined => {
  if (process.platform !== "linux") return "network namespaces need Linux"
  if (process.getuid?.() !== 0) return "network namespaces need root"
  try {
    run("ip", ["netns", "list"])
  } catch {
    return "the ip command (iproute2) is missing"
  }
  try {
    run("nft", ["--version"])
  } catch {
    return "the nft command (nftables) is missing"
  }
  const probe = `nlprobe-${process.pid}`
  try {
    ip("netns", "add", probe)
    inNs(probe, "nft", ["-f", "-"], natRules("symmetric"))
    return undefined
  } catch (error) {
    return `nftables NAT does not work here: ${String(error).split("\n")[0]}`
  } finally {
    try {
      ip("netns", "del", probe)
    } catch {}
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Removes the namespaces of labs whose process is gone (a killed test run cannot clean up after itself). */
const sweep = () => {
  const names = ip("netns", "list")
    .split("\n")
    .map((line) => line.split(" ")[0] ?? "")
  for (const name of names) {
    const match = NAME.exec(name)
    if (match?.[1] !== undefined && !alive(Number.parseInt(match[1], 16))) {
      try {
        ip("netns", "del", name)
      } catch {}
    }
  }
}

let labs = 0

/** Claims a 10.<b>.0.0/24 block for the test process's way in: the route is the lock. */
const claimAccess = (link: string, publicNs: string): number => {
  for (let b = 220; b < 255; b++) {
    ip("addr", "add", `10.${b}.250.1/30`, "dev", link)
    try {
      ip("route", "add", `10.${b}.0.0/24`, "via", `10.${b}.250.2`)
      ip("-n", publicNs, "addr", "add", `10.${b}.250.2/30`, "dev", "up0")
      return b
    } catch {
      ip("addr", "del", `10.${b}.250.1/30`, "dev", link)
    }
  }
  throw new Error("no free 10.x block for the lab's access route")
}

/** A lab with one home per entry of `nats`, each behind a NAT of that kind. */
export const make = (nats: ReadonlyArray<NatKind>): Effect.Effect<Lab, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        sweep()
        const tag = `nl${process.pid.toString(16)}x${labs++}`
        const publicNs = `${tag}-pub`
        const made: Array<string> = []
        let guard: number | undefined
        const add = (ns: string) => {
          ip("netns", "add", ns)
          made.push(ns)
          ip("-n", ns, "link", "set", "lo", "up")
        }
        try {
          add(publicNs)
          inNs(publicNs, "sysctl", ["-qw", "net.ipv4.ip_forward=1"])
          for (const range of DROPPED) ip("-n", publicNs, "route", "add", "blackhole", range)
          for (const address of PUBLIC.routers) ip("-n", publicNs, "addr", "add", `${address}/32`, "dev", "lo")
          // The test process's way in (deleting the public namespace deletes both ends).
          ip("link", "add", tag, "type", "veth", "peer", "name", "up0", "netns", publicNs)
          ip("link", "set", tag, "up")
          ip("-n", publicNs, "link", "set", "up0", "up")
          const b = claimAccess(tag, publicNs)
          ip("route", "add", "blackhole", LAB_PUBLIC, "metric", String(b))
          guard = b
          const access = [1, 2, 3].map((host) => `10.${b}.0.${host}`)
          for (const address of access) ip("-n", publicNs, "addr", "add", `${address}/32`, "dev", "lo")

          const homes = nats.map((kind, i): Home => {
            const n = i + 1
            const natNs = `${tag}-nat${n}`
            const homeNs = `${tag}-home${n}`
            add(natNs)
            add(homeNs)
            // WAN: nat's "wan" ↔ public's "wan<n>", 11.0.<n>.0/24.
            ip("-n", natNs, "link", "add", "wan", "type", "veth", "peer", "name", `wan${n}`, "netns", publicNs)
            ip("-n", natNs, "addr", "add", `11.0.${n}.2/24`, "dev", "wan")
            ip("-n", natNs, "link", "set", "wan", "up")
            ip("-n", publicNs, "addr", "add", `11.0.${n}.1/24`, "dev", `wan${n}`)
            ip("-n", publicNs, "link", "set", `wan${n}`, "up")
            ip("-n", natNs, "route", "add", "default", "via", `11.0.${n}.1`)
            // LAN: home's "eth0" ↔ nat's "lan", 192.168.<n>.0/24.
            ip("-n", homeNs, "link", "add", "eth0", "type", "veth", "peer", "name", "lan", "netns", natNs)
            ip("-n", natNs, "addr", "add", `192.168.${n}.1/24`, "dev", "lan")
            ip("-n", natNs, "link", "set", "lan", "up")
            ip("-n", homeNs, "addr", "add", `192.168.${n}.2/24`, "dev", "eth0")
            ip("-n", homeNs, "link", "set", "eth0", "up")
            ip("-n", homeNs, "route", "add", "default", "via", `192.168.${n}.1`)
            inNs(natNs, "sysctl", ["-qw", "net.ipv4.ip_forward=1"])
            inNs(natNs, "nft", ["-f", "-"], natRules(kind))
            const address = `192.168.${n}.2`
            return {
              index: n,
              namespace: homeNs,
              address,
              prefix: ["ip", "netns", "exec", homeNs],
              nat: { kind, namespace: natNs, wan: `11.0.${n}.2` },
              listen: (port = 0) => `/ip4/${address}/tcp/${port}`,
            }
          })
          const lab: Lab = {
            public: {
              namespace: publicNs,
              prefix: ["ip", "netns", "exec", publicNs],
              controlPlane: access[0] as string,
              routers: PUBLIC.routers,
              routerMetrics: access.slice(1),
            },
            homes,
            exec: (namespace, args) =>
              Effect.try({
                try: () => inNs(namespace, args[0] ?? "true", args.slice(1)),
                catch: (error) => new Error(`${args.join(" ")} in ${namespace}: ${String(error)}`),
              }),
          }
          return { tag, made, guard, lab }
        } catch (error) {
          remove(tag, made, guard)
          throw error
        }
      },
      catch: (error) => new Error(`the NAT lab could not be made: ${String(error)}`),
    }),
    ({ tag, made, guard }) => Effect.sync(() => remove(tag, made, guard)),
  ).pipe(Effect.map(({ lab }) => lab))

/** Deletes the lab's namespaces (their links and nftables tables go with them), its access link and its guard. */
const remove = (tag: string, made: ReadonlyArray<string>, guard: number | undefined) => {
  if (guard !== undefined) {
    try {
      ip("route", "del", "blackhole", LAB_PUBLIC, "metric", String(guard))
    } catch {}
  }
  for (const ns of [...made].reverse()) {
    try {
      ip("netns", "del", ns)
    } catch {}
  }
  try {
    ip("link", "del", tag)
  } catch {}
}

/** The public segment's mesh: the control plane and two routers (libp2p on public addresses, metrics on access). */
export const publicMesh = (lab: Lab, folder: string, options: Partial<Topology.Options> = {}) =>
  Effect.gen(function* () {
    const cp = yield* Topology.controlPlane({
      ...options,
      folder,
      controlPlaneHost: lab.public.controlPlane,
      controlPlanePrefix: lab.public.prefix,
    })
    const routers = yield* Effect.all(
      lab.public.routers.map((host, i) =>
        Effect.flatMap(
          Effect.promise(() => freePort()),
          (port) =>
            Topology.router(cp, folder, `router-${i + 1}`, {
              host,
              port,
              metricsHost: lab.public.routerMetrics[i] as string,
              prefix: lab.public.prefix,
              ...(options.syncInterval === undefined ? {} : { syncInterval: options.syncInterval }),
              // libp2p announces a public listen address only once something verified it; a router's operator
              // names its public address.
              extraArgs: ["--external-addr", `/ip4/${host}/tcp/${port}`],
            }),
        ),
      ),
      { concurrency: "unbounded" },
    )
    return { cp, routers }
  })

/** A member in `home`, listening on the home's private address (port 0 unless `options.listen` says otherwise). */
export const member = (
  cp: ControlPlaneProcess,
  folder: string,
  home: Home,
  name: string,
  options: Topology.NodeOptions = {},
): Effect.Effect<Topology.Node, unknown, Scope.Scope> =>
  Topology.node(cp, folder, name, { listen: home.listen(), ...options, prefix: home.prefix })
