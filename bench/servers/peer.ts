/**
 * A bench peer: a MeshHost (the hosts the mesh's nodes and routers run: tcp + noise + yamux, the mesh handshake,
 * gater and stream guard) in a process of its own, authenticated by a signer the benchmark makes up for the run, not
 * by the mesh's control plane. The mesh-path benchmarks time their bare-stream baselines against it, so that both
 * ends of a baseline stream live in separate processes, as the two ends of a proxied request do.
 *
 * `node`: serves echo, sink and source streams, and `/mesh/bench/http/1.0.0`, whose bytes it pipes to a fresh TCP
 * connection to the backend and back: HTTP written straight onto a stream, the least a proxy can do. With a relay
 * address it also listens on `<relay>/p2p-circuit`. `router`: a circuit relay for such a node.
 *
 * Usage: peer.ts <info port> <node|router> [backend port] [relay address]; BENCH_SIGNER_SEED and BENCH_SIGNER_PUBLIC
 * (hex) hold the signer. `GET http://127.0.0.1:<info port>/info` answers `{ peerId, address }` once it is listening.
 */
import "../../src/platform/biscuit-wasm.js"
import { createServer } from "node:http"
import { createConnection } from "node:net"
import { Effect, Logger, LogLevel, Scope } from "effect"
import * as Biscuit from "../../src/crypto/Biscuit.js"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { NODE_ROLE, ROUTER_ROLE } from "../../src/domain/Policy.js"
import * as MeshHostLive from "../../src/layers/mesh/MeshHostLive.js"
import * as TestPeer from "../../src/testing/TestPeer.js"

import { ECHO, HTTP, SINK, SOURCE, SOURCE_BYTES } from "../lib/benchPeers.js"

{
  const [infoPort, mode = "node", backendPort, relay] = process.argv.slice(2)
  if (mode !== "node" && mode !== "router") throw new Error(`mode ${mode}`)
  const signer = {
    id: 1,
    seed: Buffer.from(process.env.BENCH_SIGNER_SEED ?? "", "hex"),
    publicKey: Buffer.from(process.env.BENCH_SIGNER_PUBLIC ?? "", "hex"),
  }
  const key = PeerKey.generate()
  const credential = Biscuit.mint(
    {
      peerId: key.peerId,
      role: mode === "router" ? ROUTER_ROLE : NODE_ROLE,
      labels: { bench: "peer" },
      expiresAtMs: Date.now() + 24 * 3_600_000,
    },
    signer,
  )
  const quietly = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.runPromise(effect.pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))
  const scope = Effect.runSync(Scope.make())
  const host = await quietly(
    Scope.extend(
      MeshHostLive.make({
        seed: key.seed,
        credential: Effect.succeed(credential),
        trust: Effect.succeed(TestPeer.trusting([signer])),
        listen: ["/ip4/127.0.0.1/tcp/0"],
        mode,
      }),
      scope,
    ),
  )
  const address = (await quietly(host.addresses)).find((a) => a.includes("/tcp/") && !a.includes("p2p-circuit"))
  if (mode === "node") {
    const libp2p = host.libp2p
    const options = { runOnLimitedConnection: true }
    await libp2p.handle(
      ECHO,
      async (stream) => {
        for await (const chunk of stream) stream.send(chunk)
        await stream.close()
      },
      options,
    )
    await libp2p.handle(
      SINK,
      async (stream) => {
        let size = 0
        for await (const chunk of stream) size += chunk.byteLength
        stream.send(new TextEncoder().encode(String(size)))
        await stream.close()
      },
      options,
    )
    const block = new Uint8Array(65536).fill(0x61)
    await libp2p.handle(
      SOURCE,
      async (stream) => {
        for await (const _ of stream) {
          // the caller sends nothing; its end is the request
        }
        for (let sent = 0; sent < SOURCE_BYTES; sent += block.byteLength) {
          if (!stream.send(block)) await stream.onDrain()
        }
        await stream.close()
      },
      options,
    )
    await libp2p.handle(
      HTTP,
      (stream) => {
        const socket = createConnection({ host: "127.0.0.1", port: Number(backendPort) })
        socket.setNoDelay(true)
        socket.on("data", (chunk: Buffer) => {
          if (!stream.send(chunk)) {
            socket.pause()
            stream.onDrain().then(
              () => socket.resume(),
              () => socket.destroy(),
            )
          }
        })
        socket.on("end", () => void stream.close().catch(() => stream.abort(new Error("close failed"))))
        socket.on("error", (error) => stream.abort(error))
        void (async () => {
          try {
            for await (const chunk of stream) {
              if (!socket.write(chunk.subarray())) await new Promise((resolve) => socket.once("drain", resolve))
            }
            socket.end()
          } catch {
            socket.destroy()
          }
        })()
      },
      options,
    )
    if (relay !== undefined) {
      await quietly(host.dial(relay))
      await quietly(host.listen(`${relay}/p2p-circuit`))
    }
  }
  createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ peerId: host.peerId, address }))
  }).listen(Number(infoPort), "127.0.0.1")
}
