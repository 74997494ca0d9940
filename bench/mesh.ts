/**
 * What mesh authentication costs on the wire: stream open + 1 KiB echo round trips between two authenticated
 * MeshHosts, directly and through a router's relay, next to bare libp2p peers with the same transports and services
 * but no handshake, gater or stream guard. Connection setup is an entry of its own: fresh connections, from the dial
 * until the first echo came back (for MeshHost the dial resolves once both credentials verified), with and without
 * the handshake.
 */
import { performance } from "node:perf_hooks"
import { noise } from "@chainsafe/libp2p-noise"
import { circuitRelayServer, circuitRelayTransport } from "@libp2p/circuit-relay-v2"
import { gossipsub } from "@libp2p/gossipsub"
import { identify } from "@libp2p/identify"
import type { Connection, Libp2p } from "@libp2p/interface"
import { kadDHT, passthroughMapper } from "@libp2p/kad-dht"
import { ping } from "@libp2p/ping"
import { tcp } from "@libp2p/tcp"
import { yamux } from "@libp2p/yamux"
import { multiaddr } from "@multiformats/multiaddr"
import { Effect, Exit, Logger, LogLevel, Scope } from "effect"
import { createLibp2p } from "libp2p"
import * as Biscuit from "../src/crypto/Biscuit.js"
import * as Ed25519 from "../src/crypto/Ed25519.js"
import * as PeerKey from "../src/domain/PeerKey.js"
import { NODE_ROLE, ROUTER_ROLE } from "../src/domain/Policy.js"
import * as MeshHostLive from "../src/layers/mesh/MeshHostLive.js"
import { DHT_PROTOCOL } from "../src/p2p/Libp2pHost.js"
import type { MeshHostService } from "../src/services/mesh/MeshHost.js"
import { goals } from "./lib/goals.js"
import type { Entry } from "./lib/report.js"

const ECHO = "/mesh/bench/echo/1.0.0"
const PAYLOAD = new Uint8Array(1024).map((_, i) => i % 251)
const WARMUP = 300
/** Measured round trips per setup, alternating one by one so that load from elsewhere hits both alike. */
const ROUND_TRIPS = 3000
/** libp2p accepts 5 inbound connections per second per host by default; setups are spaced to stay under it. */
const SETUPS = 41
const SETUP_GAP_MS = 260

/**
 * The dialer's connection to the echoing peer. Streams are opened on it directly: libp2p's `dialProtocol` would open
 * a fresh relayed connection every time, as it never reuses a limited one (connection-manager/utils.js).
 */
type Pair = Connection

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] ?? Number.NaN
}
const p99 = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] ?? Number.NaN
}
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const echoHandler = async (libp2p: Libp2p): Promise<void> =>
  libp2p.handle(
    ECHO,
    async (stream) => {
      for await (const chunk of stream) stream.send(chunk)
      await stream.close()
    },
    { runOnLimitedConnection: true },
  )

/** One stream open + 1 KiB echo round trip over the existing connection, in ms. */
const roundTrip = async (pair: Pair): Promise<number> => {
  const started = performance.now()
  const stream = await pair.newStream(ECHO, { runOnLimitedConnection: true })
  stream.send(PAYLOAD)
  await stream.close()
  let received = 0
  for await (const chunk of stream) received += chunk.byteLength
  if (received !== PAYLOAD.byteLength) throw new Error(`echo returned ${received} bytes`)
  return performance.now() - started
}

/** Steady-state round trips of two setups, interleaved. */
const compare = async (bare: Pair, mesh: Pair) => {
  for (let i = 0; i < WARMUP; i++) {
    await roundTrip(bare)
    await roundTrip(mesh)
  }
  const samples = { bare: [] as Array<number>, mesh: [] as Array<number> }
  for (let i = 0; i < ROUND_TRIPS; i++) {
    samples.bare.push(await roundTrip(bare))
    samples.mesh.push(await roundTrip(mesh))
  }
  return samples
}

// --- bare libp2p: the same transports and services as a MeshHost, without the gate --------------------------------

const bareHost = (mode: "router" | "node", listen: ReadonlyArray<string> = []) =>
  createLibp2p({
    addresses: { listen: ["/ip4/127.0.0.1/tcp/0", ...listen] },
    transports: mode === "router" ? [tcp()] : [tcp(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: {
      identify: identify(),
      ping: ping(),
      dht: kadDHT({ protocol: DHT_PROTOCOL, clientMode: mode === "node", peerInfoMapper: passthroughMapper }),
      pubsub: gossipsub({ allowPublishToZeroTopicPeers: true }),
      ...(mode === "router"
        ? {
            relay: circuitRelayServer({
              reservations: { defaultDurationLimit: 3_600_000, defaultDataLimit: 1n << 30n },
            }),
          }
        : {}),
    },
  })

/** The one connection between two peers. */
const only = (from: Libp2p, to: Libp2p): Connection => {
  const connections = from.getConnections(to.peerId)
  if (connections.length !== 1 || connections[0] === undefined) throw new Error(`${connections.length} connections`)
  return connections[0]
}

const addressOf = (libp2p: Libp2p): string => {
  const address = libp2p
    .getMultiaddrs()
    .map(String)
    .find((a) => a.includes("/tcp/") && !a.includes("p2p-circuit"))
  if (address === undefined) throw new Error("no tcp address")
  return address
}

// --- mesh hosts -----------------------------------------------------------------------------------------------------

const signer = { id: 1, ...Ed25519.generate() }
const trust = Effect.succeed({
  keyFor: (id: number) => (id === signer.id ? signer.publicKey : undefined),
  isBanned: () => false,
})

/** Runs an effect with info logs off: a benchmark prints its table, not every dropped peer. */
const quietly = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(effect.pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))

const meshHost = (scope: Scope.Scope, mode: "router" | "node"): Promise<MeshHostService> => {
  const key = PeerKey.generate()
  const credential = Biscuit.mint(
    {
      peerId: key.peerId,
      role: mode === "router" ? ROUTER_ROLE : NODE_ROLE,
      labels: { bench: "mesh" },
      expiresAtMs: Date.now() + 3_600_000,
    },
    signer,
  )
  return quietly(
    Scope.extend(
      MeshHostLive.make({
        seed: key.seed,
        credential: Effect.succeed(credential),
        trust,
        listen: ["/ip4/127.0.0.1/tcp/0"],
        mode,
      }),
      scope,
    ),
  )
}

const meshAddress = async (host: MeshHostService): Promise<string> => {
  const addresses = await quietly(host.addresses)
  const address = addresses.find((a) => a.includes("/tcp/") && !a.includes("p2p-circuit"))
  if (address === undefined) throw new Error("no tcp address")
  return address
}

// --- connection setup -----------------------------------------------------------------------------------------------

interface Setup {
  /** Until the dial resolves: for MeshHost, until both credentials verified. */
  readonly connected: number
  /** Until the first 1 KiB echo on the new connection came back: what an application waits for. */
  readonly firstEcho: number
}

interface Dialer {
  readonly connect: () => Promise<Connection>
  readonly disconnect: () => Promise<void>
}

/**
 * Setup times over SETUPS fresh connections per dialer, alternating one by one so that load from elsewhere hits both
 * alike; the first of each is left out (it warms code paths up).
 */
const setupTimes = async (dialers: {
  readonly bare: Dialer
  readonly mesh: Dialer
}): Promise<{ readonly bare: ReadonlyArray<Setup>; readonly mesh: ReadonlyArray<Setup> }> => {
  const out = { bare: [] as Array<Setup>, mesh: [] as Array<Setup> }
  for (let i = 0; i < SETUPS; i++) {
    for (const kind of ["bare", "mesh"] as const) {
      await sleep(SETUP_GAP_MS)
      const started = performance.now()
      const connection = await dialers[kind].connect()
      const connected = performance.now() - started
      await roundTrip(connection)
      const firstEcho = performance.now() - started
      await dialers[kind].disconnect()
      if (i > 0) out[kind].push({ connected, firstEcho })
    }
  }
  return out
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const scope = Effect.runSync(Scope.make())
  const bares: Array<Libp2p> = []
  try {
    // Direct pairs.
    const bareA = await bareHost("node")
    const bareB = await bareHost("node")
    bares.push(bareA, bareB)
    await echoHandler(bareB)
    const bareTarget = addressOf(bareB)

    const meshA = await meshHost(scope, "node")
    const meshB = await meshHost(scope, "node")
    await echoHandler(meshB.libp2p)
    const meshTarget = await meshAddress(meshB)

    const setups = await setupTimes({
      bare: { connect: () => bareA.dial(multiaddr(bareTarget)), disconnect: () => bareA.hangUp(bareB.peerId) },
      mesh: {
        connect: async () => {
          await quietly(meshA.dial(meshTarget))
          return only(meshA.libp2p, meshB.libp2p)
        },
        disconnect: () => quietly(meshA.disconnect(meshB.peerId)),
      },
    })
    const direct = await compare(
      await bareA.dial(multiaddr(bareTarget)),
      await quietly(Effect.flatMap(meshA.dial(meshTarget), () => Effect.sync(() => only(meshA.libp2p, meshB.libp2p)))),
    )

    // Relayed pairs: the echoing peer listens on a relay, the dialer reaches it through the relay.
    const bareRelay = await bareHost("router")
    bares.push(bareRelay)
    const bareRelayAddress = addressOf(bareRelay)
    // Listening on the relay at start makes the reservation part of start.
    const bareHidden = await bareHost("node", [`${bareRelayAddress}/p2p-circuit`])
    const bareCaller = await bareHost("node")
    bares.push(bareHidden, bareCaller)
    await echoHandler(bareHidden)
    const bareCircuit = `${bareRelayAddress}/p2p-circuit/p2p/${bareHidden.peerId}`
    const bareRelayed = await bareCaller.dial(multiaddr(bareCircuit))

    const router = await meshHost(scope, "router")
    const meshHidden = await meshHost(scope, "node")
    const meshCaller = await meshHost(scope, "node")
    await echoHandler(meshHidden.libp2p)
    const routerAddress = await meshAddress(router)
    await quietly(meshHidden.dial(routerAddress))
    await quietly(meshHidden.listen(`${routerAddress}/p2p-circuit`))
    const meshCircuit = `${routerAddress}/p2p-circuit/p2p/${meshHidden.peerId}`
    await quietly(meshCaller.dial(meshCircuit))
    const meshRelayed = only(meshCaller.libp2p, meshHidden.libp2p)
    for (const connection of [bareRelayed, meshRelayed]) {
      if (connection.limits === undefined) throw new Error("the caller is not relayed")
    }
    const relayed = await compare(bareRelayed, meshRelayed)

    const entry = (
      name: string,
      samples: { readonly bare: ReadonlyArray<number>; readonly mesh: ReadonlyArray<number> },
      notes: string,
    ): Entry => {
      const figure = median(samples.mesh)
      const baseline = median(samples.bare)
      const ratio = figure / baseline
      return {
        name,
        figure,
        unit: "ms",
        baselineName: "bare libp2p",
        baseline,
        ratio,
        goal: `<= ${goals.mesh.overBare.toFixed(2)}`,
        met: ratio <= goals.mesh.overBare,
        notes: `median of ${samples.mesh.length} round trips (ratio = mesh / bare; lower is better); p99 ${p99(samples.mesh).toFixed(2)} ms vs bare ${p99(samples.bare).toFixed(2)} ms; ${notes}`,
      }
    }
    const setupMesh = median(setups.mesh.map((x) => x.firstEcho))
    const setupBare = median(setups.bare.map((x) => x.firstEcho))
    return [
      entry(
        "stream open + 1 KiB echo, direct",
        direct,
        "on a connection already set up (and, for mesh, authenticated)",
      ),
      entry("stream open + 1 KiB echo, via relay", relayed, "relayed (limited) connection through a router"),
      {
        name: "connection setup + first 1 KiB echo, direct",
        figure: setupMesh,
        unit: "ms",
        baselineName: "bare libp2p (no handshake)",
        baseline: setupBare,
        ratio: setupMesh / setupBare,
        notes: `median of ${setups.mesh.length} fresh connections each, alternating (ratio = with the mesh handshake / without); dial resolved after ${median(setups.mesh.map((x) => x.connected)).toFixed(1)} ms vs ${median(setups.bare.map((x) => x.connected)).toFixed(1)} ms bare; p99 ${p99(setups.mesh.map((x) => x.firstEcho)).toFixed(1)} ms vs ${p99(setups.bare.map((x) => x.firstEcho)).toFixed(1)} ms`,
      },
    ]
  } finally {
    await Promise.all(bares.map((b) => Promise.resolve(b.stop()).catch(() => undefined)))
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
