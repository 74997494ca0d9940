/**
 * What a peer's proxy streams may hold of the serving node: a control plane, a router and two nodes in this process
 * over loopback. B serves the test backend with small limits (deadlines of a few seconds, four streams per peer); A
 * writes raw HTTP onto `/mesh/proxy/1.0.0` streams to B, as any peer could. Assertions are on what happens and in
 * which order, never on how long it took.
 */
import { request as httpRequest } from "node:http"
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { StreamSocket } from "../../src/p2p/StreamSocket.js"
import { MeshHost } from "../../src/services/mesh/MeshHost.js"
import { PROTOCOL } from "../../src/services/proxy/PeerProxy.js"
import * as ControlPlaneHarness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"
import * as RouterHarness from "../../src/testing/RouterHarness.js"
import { setPolicy } from "../support/admin.js"
import { testBackend } from "./backends.js"

const LIMIT = Duration.seconds(3)
const MAX_STREAMS = 4

class Mesh extends Context.Tag("test/IngressMesh")<
  Mesh,
  { readonly host: Effect.Effect.Success<typeof MeshHost>; readonly bId: string }
>() {}

const MeshLive = Layer.scoped(
  Mesh,
  Effect.gen(function* () {
    const backend = yield* testBackend
    const cp = yield* ControlPlaneHarness.make({ autoApproveEnrollment: true })
    yield* setPolicy(cp, {
      roles: [
        { name: "mesh:role:node", allowed_labels: ["*"], allowed_services: ["inference://*"], allowed_targets: ["*"] },
      ],
      bindings: [],
    })
    yield* RouterHarness.make(cp)
    const b = yield* NodeHarness.make(cp, {
      file: {
        labels: {},
        egress: { require_labels: {} },
        services: [{ name: "test", type: "inference", description: "", target_url: backend.url, env: {} }],
      },
      overrides: {
        ingress: {
          headersTimeout: LIMIT,
          idleTimeout: LIMIT,
          maxStreamsPerPeer: MAX_STREAMS,
          backendHeadersTimeout: Option.some(LIMIT),
        },
      },
    })
    const a = yield* NodeHarness.make(cp)
    yield* Effect.all([a.connected, b.connected], { concurrency: "unbounded" })
    const phase = yield* a.lifecycle.phase
    if (phase._tag !== "Member") return yield* Effect.dieMessage("A is not a member")
    const host = Context.get(phase.context as Context.Context<MeshHost>, MeshHost)
    return { host, bId: yield* b.peerId }
  }),
)

/** A raw stream from A to B's proxy. */
const stream = Effect.gen(function* () {
  const { host, bId } = yield* Mesh
  const { stream, connection } = yield* Effect.orDie(host.openStream(bId, PROTOCOL))
  const socket = new StreamSocket(stream, connection)
  // A reset is what some tests wait for: `closed` sees it.
  socket.on("error", () => undefined)
  return socket
})

/** Completes when the stream has closed, whoever closed it; fails the test if that takes over 30 s. */
const closed = (socket: StreamSocket) =>
  Effect.async<void>((resume) => {
    if (socket.destroyed) return resume(Effect.void)
    socket.once("close", () => resume(Effect.void))
    socket.resume()
  }).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the stream stayed open") }))

/** The status of one GET on its own stream, or `reset` when the stream ends without an answer. */
const get = (socket: StreamSocket, path: string) =>
  Effect.async<number | "reset">((resume) => {
    const req = httpRequest({ createConnection: () => socket, path, method: "GET" }, (res) => {
      resume(Effect.succeed(res.statusCode ?? 0))
      res.resume()
    })
    req.on("error", () => resume(Effect.succeed("reset")))
    req.end()
  }).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("no answer and no reset") }))

/** Sends the first line and one header of a request, and nothing more. */
const halfHeaders = (socket: StreamSocket) =>
  Effect.sync(() => socket.write("GET /inference/test/echo HTTP/1.1\r\nhost: mesh\r\n"))

layer(MeshLive, { excludeTestServices: true, timeout: Duration.minutes(2) })("limits on peers' streams", (it) => {
  it.effect("a stream trickling its headers is reset at the header deadline; a whole request is answered", () =>
    Effect.gen(function* () {
      const stuck = yield* stream
      yield* halfHeaders(stuck)
      // A header line every second: never quiet for the idle timer, never done for the header deadline.
      yield* Effect.sync(() => stuck.write("x-slow: 1\r\n")).pipe(
        Effect.zipRight(Effect.sleep("1 second")),
        Effect.repeat({ while: () => !stuck.destroyed }),
        Effect.fork,
      )
      expect(yield* get(yield* stream, "/inference/test/echo")).toBe(200)
      yield* closed(stuck)
      expect(stuck.destroyed).toBe(true)
    }),
  )

  it.effect("streams beyond the per-peer cap are reset at once; once the held ones are gone, new ones are served", () =>
    Effect.gen(function* () {
      const held = yield* Effect.forEach(Array.from({ length: MAX_STREAMS }), () => Effect.tap(stream, halfHeaders))
      // The held streams are still open (their deadline is seconds away) when the next one arrives.
      expect(yield* get(yield* stream, "/inference/test/echo")).toBe("reset")
      yield* Effect.forEach(held, closed, { discard: true })
      expect(yield* get(yield* stream, "/inference/test/echo")).toBe(200)
    }),
  )

  it.effect("an answer that goes quiet is reset by the idle timer", () =>
    Effect.gen(function* () {
      const socket = yield* stream
      expect(yield* get(socket, "/inference/test/hold")).toBe(200)
      yield* closed(socket)
    }),
  )

  it.effect("a backend that sends no headers in time: 502 with the one error body", () =>
    Effect.gen(function* () {
      const socket = yield* stream
      const answer = yield* Effect.async<{ status: number; body: string }>((resume) => {
        const req = httpRequest({ createConnection: () => socket, path: "/inference/test/silent" }, (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () =>
            resume(Effect.succeed({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() })),
          )
        })
        req.on("error", (e) => resume(Effect.die(e)))
        req.end()
      }).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("no answer") }))
      expect(answer.status).toBe(502)
      expect(JSON.parse(answer.body)).toEqual({
        error: "bad_gateway",
        message: "the inference service test did not answer within 3s",
      })
    }),
  )
})
