/**
 * `tsx bench/control-plane-cpu.ts [info|keys|refresh|enroll] [sqlite|postgres] [seconds]`: the control plane's CPU
 * time (user + system, from /proc) per request under the same load as the `info-keys`, `refresh` and `enroll`
 * benchmarks, and for `info`/`keys` a bare node:http server's for the same bytes. Unlike throughput, CPU per request
 * hardly moves with other load on a shared machine, so runs before and after a change compare.
 */
import { readFileSync } from "node:fs"
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import "../src/platform/biscuit-wasm.js"
import * as Biscuit from "../src/crypto/Biscuit.js"
import * as Challenge from "../src/domain/Challenge.js"
import * as PeerKey from "../src/domain/PeerKey.js"
import {
  BootstrapEnrollRequestSchema,
  TokenRefreshRequestSchema,
  TokenRefreshResponseSchema,
} from "../src/gen/mesh_pb.js"
import { type Driver, launch } from "./lib/controlPlane.js"
import * as Load from "./lib/load.js"
import { freePort, start } from "./lib/processes.js"
import * as Seed from "./lib/seed.js"

const [what = "info", driver = "sqlite", secondsArg = "5"] = process.argv.slice(2) as [string, Driver, string]
const SECONDS = Number(secondsArg)
const TICK_MS = 10

const cpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

const measured = async (pid: number, load: () => Promise<ReadonlyArray<Load.LoadResult>>) => {
  const before = cpuMs(pid)
  const results = await load()
  const cpu = cpuMs(pid) - before
  const failed = results.find((r) => r.errors > 0)
  if (failed !== undefined) throw new Error(`${failed.errors} failed: ${failed.firstError}`)
  // Warm-up requests are not in `requests` but did cost CPU: count them by rate.
  const requests = results.reduce((n, r) => n + r.requests, 0)
  const rps = requests / SECONDS
  return { rps, cpuPerRequest: cpu / (rps * (SECONDS + 1)) }
}

const line = (name: string, r: { rps: number; cpuPerRequest: number }) =>
  process.stdout.write(`${name}: ${r.rps.toFixed(0)} req/s, ${r.cpuPerRequest.toFixed(3)} ms CPU per request\n`)

const cp = await launch(driver, what === "enroll" ? ["--auto-approve-enrollment", "--enroll-rate-limit", "0"] : [])
const pid = cp.child.process.pid as number
try {
  if (what === "info" || what === "keys") {
    await Seed.bulk(cp, 1_000, 100)
    const url = `${cp.url}/${what}`
    const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer())
    line(`GET /${what}`, await measured(pid, async () => [await Load.run({ url, concurrency: 32, seconds: SECONDS })]))
    const port = await freePort()
    const bare = await start(
      "bench/servers/bare.ts",
      [String(port), "application/x-protobuf", Buffer.from(bytes).toString("base64"), "base64"],
      `http://127.0.0.1:${port}/`,
    )
    try {
      line(
        "bare",
        await measured(bare.process.pid as number, async () => [
          await Load.run({ url: `http://127.0.0.1:${port}/`, concurrency: 32, seconds: SECONDS }),
        ]),
      )
    } finally {
      await bare.stop()
    }
  } else if (what === "refresh") {
    await Seed.bulk(cp, 1_000, 100)
    const workers = await Seed.nodes(cp, 16)
    const result = await measured(pid, () =>
      Promise.all(
        workers.map((node) =>
          Load.run({
            url: `${cp.url}/refresh`,
            method: "POST",
            concurrency: 1,
            seconds: SECONDS,
            headers: { "content-type": "application/x-protobuf" },
            headersFor: () => ({ authorization: `Bearer ${Biscuit.toText(node.credential)}` }),
            body: () => {
              const now = BigInt(Date.now())
              return toBinary(
                TokenRefreshRequestSchema,
                create(TokenRefreshRequestSchema, {
                  peerId: node.peer.peerId,
                  challengeUnixMs: now,
                  challengeSignature: Challenge.sign(node.peer.seed, "refresh", node.peer.peerId, now),
                }),
              )
            },
            onResponse: (body) => {
              node.credential = fromBinary(TokenRefreshResponseSchema, body).biscuitToken
            },
          }),
        ),
      ),
    )
    line(`POST /refresh (${driver})`, result)
  } else {
    const token = await Seed.token(cp, 20_000)
    const peers = Array.from({ length: 5_000 }, () => {
      const peer = PeerKey.generate()
      return { ...peer, publicKeyProtobuf: PeerKey.toProtobuf(peer.publicKey) }
    })
    let next = 0
    const result = await measured(pid, async () => [
      await Load.run({
        url: `${cp.url}/enroll`,
        method: "POST",
        concurrency: 16,
        seconds: SECONDS,
        headers: { "content-type": "application/x-protobuf" },
        body: () => {
          const peer = peers[next++]
          if (peer === undefined) throw new Error("ran out of prepared peers")
          const now = BigInt(Date.now())
          return toBinary(
            BootstrapEnrollRequestSchema,
            create(BootstrapEnrollRequestSchema, {
              bootstrapToken: token,
              peerId: peer.peerId,
              publicKey: peer.publicKeyProtobuf,
              challengeUnixMs: now,
              challengeSignature: Challenge.sign(peer.seed, "enroll", peer.peerId, now),
            }),
          )
        },
      }),
    ])
    line(`POST /enroll (${driver})`, result)
  }
} finally {
  await cp.close()
}
