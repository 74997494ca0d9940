/**
 * Identity evidence as JSON: a credential and the control-plane key that verifies it, with the facts it attests.
 * Anyone holding it can check it independently: the credential verifies under `control_plane_public_key` (Ed25519,
 * SPKI DER, base64) and names `peer_id`. It says who this node (or a peer it authenticated) is; it grants nothing by
 * itself, since using a credential needs the matching private key.
 */
import * as Biscuit from "../../crypto/Biscuit.js"
import * as Ed25519 from "../../crypto/Ed25519.js"

export interface Evidence {
  readonly peer_id: string
  /** Standard base64 of the biscuit bytes. */
  readonly credential: string
  readonly control_plane_public_key: string
  readonly key_id: number
  readonly roles: ReadonlyArray<string>
  readonly labels: Readonly<Record<string, string>>
  readonly expires_at: string
  /** For a peer: when this node last verified the credential. */
  readonly verified_at?: string
}

const iso = (ms: number) => new Date(ms).toISOString()

export const make = (options: {
  readonly credential: Uint8Array
  readonly facts: Biscuit.Facts
  readonly keyId: number
  readonly publicKey: Uint8Array
  readonly verifiedAtMs?: number
}): Evidence => ({
  peer_id: options.facts.peerId,
  credential: Biscuit.toText(options.credential),
  control_plane_public_key: Buffer.from(Ed25519.spkiDer(options.publicKey)).toString("base64"),
  key_id: options.keyId,
  roles: [options.facts.role],
  labels: options.facts.labels,
  expires_at: iso(options.facts.expiresAtMs),
  ...(options.verifiedAtMs === undefined ? {} : { verified_at: iso(options.verifiedAtMs) }),
})
