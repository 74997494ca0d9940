/** Reading a whole message body into memory, with a ceiling: a completion request, a provider's model list. */
import type { IncomingMessage } from "node:http"
import { Data, Effect } from "effect"

/** The body grew past the ceiling; reading stopped there. */
export class TooLarge extends Data.TaggedError("TooLarge")<{ readonly limit: number }> {}

/** The body stopped short: its connection or stream closed first. */
export class CutOff extends Data.TaggedError("CutOff")<{ readonly reason: string }> {}

/** The declared length, when there is a valid one. */
export const declaredLength = (message: IncomingMessage): number | undefined => {
  const value = message.headers["content-length"]
  if (value === undefined || !/^\d{1,15}$/.test(value)) return undefined
  return Number(value)
}

/**
 * The whole body. Past `limit` bytes (declared or received) it fails at once and stops reading; the caller decides
 * what happens to the rest (the local API answers 413 and closes the connection).
 */
export const read = (message: IncomingMessage, limit: number): Effect.Effect<Buffer, TooLarge | CutOff> =>
  Effect.async<Buffer, TooLarge | CutOff>((resume) => {
    const declared = declaredLength(message)
    if (declared !== undefined && declared > limit) return resume(Effect.fail(new TooLarge({ limit })))
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onError)
      message.off("close", onClose)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > limit) {
        cleanup()
        message.pause()
        return resume(Effect.fail(new TooLarge({ limit })))
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)))
    }
    const onError = (error: Error) => {
      cleanup()
      resume(Effect.fail(new CutOff({ reason: error.message.slice(0, 200) })))
    }
    const onClose = () => {
      cleanup()
      resume(Effect.fail(new CutOff({ reason: "the connection closed before the body ended" })))
    }
    if (message.complete && message.readableEnded) return resume(Effect.succeed(Buffer.alloc(0)))
    message.on("data", onData)
    message.once("end", onEnd)
    message.once("error", onError)
    message.once("close", onClose)
    return Effect.sync(cleanup)
  })
