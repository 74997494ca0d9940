/**
 * A node's proof of possession on a signed report (`X-Mesh-Challenge-Ts`, `X-Mesh-Challenge-Sig`), as the report
 * routes read it. A missing or malformed proof reads like a wrong one: the check itself names what was wrong.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Either } from "effect"
import * as Challenge from "../domain/Challenge.js"

export interface Proof {
  readonly unixMs: number
  readonly signature: Uint8Array
}

export const fromRequest: Effect.Effect<Proof, never, HttpServerRequest.HttpServerRequest> = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => {
    const ts = (request.headers["x-mesh-challenge-ts"] ?? "").trim()
    const signature = Challenge.fromHeader(request.headers["x-mesh-challenge-sig"] ?? "")
    return {
      unixMs: /^\d{1,16}$/.test(ts) ? Number(ts) : 0,
      signature: Either.getOrElse(signature, () => new Uint8Array(64)),
    }
  },
)
