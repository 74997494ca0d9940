/** Which of the node's listeners a request arrived on: it decides what the caller must present. */
import { Context } from "effect"

export interface ListenerInfo {
  /** `tcp`: loopback or network TCP; `tls`: TCP with TLS; `socket`: the Unix socket. */
  readonly kind: "tcp" | "tls" | "socket"
  /** The client presented a certificate our `--tls-ca` signed (mTLS): it needs no API token. */
  readonly verifiedClient: boolean
}

export class Listener extends Context.Tag("mesh/node/Listener")<Listener, ListenerInfo>() {}
