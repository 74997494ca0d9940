/**
 * The bare-stream baselines of the mesh-path benchmarks, between processes: bench peers (bench/servers/peer.ts,
 * MeshHosts authenticated by a signer made up for the run) in child processes, and a MeshHost in the benchmark's own
 * process that dials them, as the benchmark's client is the one that talks to node A. `direct` is a peer dialled
 * straight; `relayed`, when asked for, a peer reached only through a relay of its own (a third process), as nodes
 * behind NAT reach each other through a router.
 *
 * The nodes cannot serve these streams (the product has no echo or pipe protocol, and gets no bench hook): the peers
 * play B's part on the same kind of connection, so a baseline is what the transport costs between two processes.
 */
import { request } from "node:http"
import { performance } from "node:perf_hooks"
import type { Connection } from "@libp2p/interface"
import { Effect, Logger, LogLevel, type Scope } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as Ed25519 from "../../src/crypto/Ed25519.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { NODE_ROLE } from "../../src/domain/Policy.js"
import * as MeshHostLive from "../../src/layers/mesh/MeshHostLive.js"
import { StreamSocket } from "../../src/p2p/StreamSocket.js"
import type { MeshHostService } from "../../src/services/mesh/MeshHost.js"
import * as TestPeer from "../../src/testing/TestPeer.js"
import { freePort, start } from "./processes.js"

export const ECHO = "/mesh/bench/echo/1.0.0"
export const SINK = "/mesh/bench/sink/1.0.0"
export const SOURCE = "/mesh/bench/source/1.0.0"
export const HTTP = "/mesh/bench/http/1.0.0"
/** What a source stream sends. */
export const SOURCE_BYTES = 1024 * 1024

const PAYLOAD = new Uint8Array(1024).map((_, i) => i % 251)

export interface Peer {
  readonly peerId: string
  /** The dialer's one connection to the peer. */
  readonly connection: Connection
  /** Throws when the dialer no longer talks to the peer over `connection`. */
  readonly check: () => void
}

export interface BenchPeers {
  readonly host: MeshHostService
  readonly direct: Peer
  readonly relayed?: Peer
}

const quietly = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(effect.pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))

interface Info {
  readonly peerId: string
  /** Its TCP address, `/p2p/<peer id>` included. */
  readonly address: string
}

/** A bench peer process, stopped with the scope. */
const peerProcess = (
  signer: Ed25519.RawKeyPair,
  mode: "node" | "router",
  backendPort: number,
  relay?: string,
): Effect.Effect<Info, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const infoPort = yield* Effect.promise(freePort)
    const url = `http://127.0.0.1:${infoPort}/info`
    yield* Effect.acquireRelease(
      Effect.promise(() =>
        start(
          "bench/servers/peer.ts",
          [String(infoPort), mode, String(backendPort), ...(relay === undefined ? [] : [relay])],
          url,
          {
            BENCH_SIGNER_SEED: Buffer.from(signer.seed).toString("hex"),
            BENCH_SIGNER_PUBLIC: Buffer.from(signer.publicKey).toString("hex"),
          },
        ),
      ),
      (child) => Effect.promise(() => child.stop()),
    )
    return (yield* Effect.promise(() => fetch(url).then((r) => r.json()))) as Info
  })

const only = (host: MeshHostService, peer: string): Connection => {
  const connections = host.libp2p.getConnections().filter((c) => c.remotePeer.toString() === peer)
  if (connections.length !== 1 || connections[0] === undefined) {
    throw new Error(`${connections.length} connections to a bench peer`)
  }
  return connections[0]
}

const connect = async (host: MeshHostService, peerId: string, address: string, relayed: boolean): Promise<Peer> => {
  await quietly(host.dial(address))
  const connection = only(host, peerId)
  if ((connection.limits !== undefined) !== relayed) throw new Error(`bench peer not ${relayed ? "" : "un"}relayed`)
  return {
    peerId,
    connection,
    check: () => {
      if (only(host, peerId) !== connection) throw new Error("the connection to a bench peer changed")
    },
  }
}

/**
 * Bench peers whose HTTP streams go to the backend on `backendPort`, living as long as the scope: a peer dialled
 * straight, and with `relayed` one more behind a relay.
 */
export const make = (
  backendPort: number,
  options: { readonly relayed?: boolean } = {},
): Effect.Effect<BenchPeers, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const signer = Ed25519.generate()
    const withId = { id: 1, ...signer }
    const key = PeerKey.generate()
    const credential = Biscuit.mint(
      { peerId: key.peerId, role: NODE_ROLE, labels: { bench: "client" }, expiresAtMs: Date.now() + 24 * 3_600_000 },
      withId,
    )
    const host = yield* MeshHostLive.make({
      seed: key.seed,
      credential: Effect.succeed(credential),
      trust: Effect.succeed(TestPeer.trusting([withId])),
      listen: ["/ip4/127.0.0.1/tcp/0"],
      mode: "node",
    }).pipe(Logger.withMinimumLogLevel(LogLevel.Warning))
    const target = yield* peerProcess(signer, "node", backendPort)
    const direct = yield* Effect.promise(() => connect(host, target.peerId, target.address, false))
    if (options.relayed !== true) return { host, direct }
    const relay = yield* peerProcess(signer, "router", backendPort)
    const relayAddress = relay.address
    const hidden = yield* peerProcess(signer, "node", backendPort, relayAddress)
    const relayed = yield* Effect.promise(() =>
      connect(host, hidden.peerId, `${relayAddress}/p2p-circuit/p2p/${hidden.peerId}`, true),
    )
    return { host, direct, relayed }
  })

/** One stream open + 1 KiB echo round trip, in ms; throws when the echo comes back short. */
export const echo = async (peer: Peer): Promise<number> => {
  const started = performance.now()
  const stream = await peer.connection.newStream(ECHO, { runOnLimitedConnection: true })
  stream.send(PAYLOAD)
  await stream.close()
  let received = 0
  for await (const chunk of stream) received += chunk.byteLength
  if (received !== PAYLOAD.byteLength) throw new Error("echo came back short")
  return performance.now() - started
}

/** ms to send `body` on a fresh stream and read its length back. */
export const sink = async (peer: Peer, body: Uint8Array): Promise<number> => {
  const started = performance.now()
  const stream = await peer.connection.newStream(SINK, { runOnLimitedConnection: true })
  for (let offset = 0; offset < body.byteLength; offset += 65536) {
    if (!stream.send(body.subarray(offset, offset + 65536))) await stream.onDrain()
  }
  await stream.close()
  let answer = ""
  for await (const chunk of stream) answer += new TextDecoder().decode(chunk.subarray())
  if (Number(answer) !== body.byteLength) throw new Error(`sink read ${answer} bytes`)
  return performance.now() - started
}

/** ms to receive SOURCE_BYTES on a fresh stream. */
export const source = async (peer: Peer): Promise<number> => {
  const started = performance.now()
  const stream = await peer.connection.newStream(SOURCE, { runOnLimitedConnection: true })
  await stream.close()
  let received = 0
  for await (const chunk of stream) received += chunk.byteLength
  if (received !== SOURCE_BYTES) throw new Error(`source sent ${received} bytes`)
  return performance.now() - started
}

/**
 * ms for one HTTP request written straight onto a fresh stream to the peer, which pipes it to the backend, and its
 * response read through: the proxy's own transport (optimistic protocol select, StreamSocket, node:http) without
 * anything the proxy decides. Throws unless the status is 200.
 */
export const http = async (
  host: MeshHostService,
  peer: Peer,
  path: string,
  /** A JSON body, POSTed; else a GET. */
  body?: Uint8Array,
): Promise<number> => {
  const started = performance.now()
  const { stream, connection, proposed } = await quietly(host.openStream(peer.peerId, HTTP, { optimistic: true }))
  const socket = new StreamSocket(stream, connection, proposed)
  await new Promise<void>((resolve, reject) => {
    const outgoing = request({
      createConnection: () => socket,
      method: body === undefined ? "GET" : "POST",
      path,
      headers: {
        host: "backend",
        ...(body === undefined
          ? {}
          : { "content-type": "application/json", "content-length": String(body.byteLength) }),
      },
    })
    outgoing.once("response", (response) => {
      if (response.statusCode !== 200) reject(new Error(`status ${response.statusCode}`))
      response.on("data", () => undefined)
      response.once("end", () => {
        socket.destroy()
        resolve()
      })
      response.once("error", reject)
    })
    outgoing.once("error", reject)
    outgoing.end(body)
  })
  return performance.now() - started
}
