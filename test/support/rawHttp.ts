/**
 * HTTP/1.1 over a bare socket, for requests `fetch` would not send as written: request targets it would normalise
 * (`/./`, `/../`, absolute form), bodies that never arrive, headers held open.
 */
import { connect, type Socket } from "node:net"

export interface RawAnswer {
  readonly status: number
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

export type RawOutcome =
  | { readonly _tag: "answer"; readonly answer: RawAnswer }
  /** The server closed the connection without a word. */
  | { readonly _tag: "closed" }
  /** Nothing at all within the wait: the request hangs. */
  | { readonly _tag: "hung" }

export interface RawRequest {
  readonly method: string
  /** The request target exactly as it goes on the wire. */
  readonly target: string
  readonly headers?: Readonly<Record<string, string>>
  /** Sent as is after the headers; `content-length` is set from it unless given in `headers`. */
  readonly body?: Uint8Array | string
}

const parse = (raw: Buffer): RawAnswer | undefined => {
  const text = raw.toString("latin1")
  const end = text.indexOf("\r\n\r\n")
  if (end === -1) return undefined
  const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n")
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(":")
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return {
    status: Number(statusLine.split(" ")[1]),
    headers,
    body: raw.subarray(Buffer.byteLength(text.slice(0, end + 4), "latin1")).toString("utf8"),
  }
}

/** Opens a connection to `url`'s host and port. */
export const open = (url: string): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket))
    socket.once("error", reject)
  })

/** The head of a request (status line and headers), with `connection: close` so the answer ends the exchange. */
export const head = (request: RawRequest): string => {
  const body = request.body ?? ""
  const headers: Record<string, string> = {
    host: "localhost",
    connection: "close",
    ...(request.body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }),
    ...request.headers,
  }
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`)
  return `${request.method} ${request.target} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`
}

/** Waits for the server's answer on `socket`, or its closing, or `waitMs` of silence. */
export const answerOf = (socket: Socket, waitMs: number): Promise<RawOutcome> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    let done = false
    const finish = (silent: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      const answer = parse(Buffer.concat(chunks))
      if (answer !== undefined) resolve({ _tag: "answer", answer })
      else resolve({ _tag: silent && chunks.length === 0 ? "hung" : "closed" })
    }
    const timer = setTimeout(() => finish(true), waitMs)
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk)
      const answer = parse(Buffer.concat(chunks))
      const length = answer?.headers["content-length"]
      if (answer !== undefined && length !== undefined && Buffer.byteLength(answer.body) >= Number(length)) {
        finish(false)
      }
    })
    socket.once("end", () => finish(false))
    socket.once("close", () => finish(false))
    socket.once("error", () => finish(false))
  })

/** Sends one request and waits up to `waitMs` for the answer. */
export const send = async (url: string, request: RawRequest, waitMs = 10_000): Promise<RawOutcome> => {
  const socket = await open(url)
  const answer = answerOf(socket, waitMs)
  socket.write(head(request))
  if (request.body !== undefined) socket.write(request.body)
  return answer
}

/** The answer of `send`, or a failure naming what happened instead. */
export const expectAnswer = (outcome: RawOutcome): RawAnswer => {
  if (outcome._tag !== "answer") throw new Error(`expected an answer, the connection ${outcome._tag}`)
  return outcome.answer
}
