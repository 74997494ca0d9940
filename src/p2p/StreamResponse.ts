/**
 * The response of a server that answers one request per stream (the proxy's ingress sends `Connection: close`).
 * node:http ends such a response's socket only once the response has emitted 'finish', a few ticks after its last
 * bytes were handed to the stream, so the stream's close (a yamux frame of its own) went out in a write of its own:
 * one more encryption, system call and wake of the caller per request. Ending the socket as soon as the response
 * ends puts the close in the same tick as the last bytes, and the connection's writes of one tick leave together
 * (CorkedTcp). node:http's own later `end()` of the socket then finds it ending and does nothing more.
 */
import { ServerResponse } from "node:http"
import { StreamSocket } from "./StreamSocket.js"

export class StreamResponse extends ServerResponse {
  override end(...args: Array<unknown>): this {
    super.end(...(args as Parameters<ServerResponse["end"]>))
    const socket = this.socket
    // Only a stream that node:http will close anyway; a response the server keeps alive leaves its socket open.
    if (socket instanceof StreamSocket && !this.shouldKeepAlive && this.writableEnded) socket.end()
    return this
  }
}
