/**
 * Mesh credentials as biscuit tokens. The authority block carries, one fact per line:
 *
 *   node("<peer id>"); role("<role>"); label("<k>", "<v>") per label; expiration(<rfc3339>);
 *   and for OIDC enrollments: issuer("<iss>"); user("<sub>"); email("<addr>"); group("<name>") per group.
 *
 * The root key id is the id of the signing key. Verification checks the signature with the key named by that id,
 * refuses attenuated tokens, reads the facts back from the block source and checks the expiry against the caller's
 * clock. Reading the source is safe because `mint` refuses any term that could break a line or a string literal
 * (quotes, backslashes, control characters). Any biscuit verifier can check our credentials the standard way.
 */
import { Either } from "effect"
import {
  Biscuit,
  BiscuitBuilder,
  BlockBuilder,
  PrivateKey,
  PublicKey,
  SignatureAlgorithm,
} from "../platform/biscuit-wasm.js"
import * as Ed25519 from "./Ed25519.js"

export interface Identity {
  readonly issuer: string
  readonly subject: string
  readonly email?: string
  readonly groups: ReadonlyArray<string>
}

export interface Facts {
  readonly peerId: string
  readonly role: string
  readonly labels: Readonly<Record<string, string>>
  /** Unix milliseconds, whole seconds (biscuit dates have second precision). */
  readonly expiresAtMs: number
  readonly identity?: Identity
}

export interface Signer {
  readonly id: number
  readonly seed: Uint8Array
}

export type Failure = "malformed" | "unknown_key" | "bad_signature" | "attenuated" | "expired"

export interface Verified {
  readonly facts: Facts
  readonly keyId: number
}

/** A valid public key whose private key was thrown away: verification under it always fails. */
const UNKNOWN_KEY = Ed25519.generate().publicKey

/** Terms that print on one line inside one string literal. */
export const isSafeTerm = (value: string): boolean => {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c < 0x20 || c === 0x7f || c === 0x22 /* " */ || c === 0x5c /* \ */) return false
  }
  return true
}

const rfc3339 = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z")

export const mint = (facts: Facts, signer: Signer): Uint8Array => {
  const terms: Array<readonly [string, ReadonlyArray<string>]> = [
    ["node", [facts.peerId]],
    ["role", [facts.role]],
    ...Object.keys(facts.labels)
      .sort()
      .map((k) => ["label", [k, facts.labels[k] as string]] as const),
  ]
  if (facts.identity !== undefined) {
    const id = facts.identity
    terms.push(["issuer", [id.issuer]], ["user", [id.subject]])
    if (id.email !== undefined) terms.push(["email", [id.email]])
    for (const group of [...id.groups].sort()) terms.push(["group", [group]])
  }
  // Terms are written as literals: a parameterized block costs several times more to build, and isSafeTerm
  // guarantees no term can end its string literal early.
  const lines = terms.map(([name, values]) => {
    for (const value of values) {
      if (!isSafeTerm(value))
        throw new Error(`credential term of ${name} holds a character biscuit cannot carry safely`)
    }
    return `${name}(${values.map((v) => `"${v}"`).join(", ")});`
  })
  lines.push(`expiration(${rfc3339(facts.expiresAtMs)});`)
  const builder = new BiscuitBuilder()
  builder.addCode(lines.join("\n"))
  builder.setRootKeyId(signer.id)
  const token = builder.build(PrivateKey.fromBytes(signer.seed, SignatureAlgorithm.Ed25519))
  try {
    return token.toBytes()
  } finally {
    token.free()
  }
}

const FACT_LINE = /^([a-z_]+)\((.*)\);$/
const STRING_TERM = /^"([^"]*)"$/

/**
 * The terms of a fact, split on the `, ` between them but never inside a string literal: a value may hold `, ` (a
 * role, a subject), never a quote (`isSafeTerm`), so a literal ends at the next quote.
 */
const splitTerms = (raw: string): Array<string> | undefined => {
  const terms: Array<string> = []
  let start = 0
  while (start < raw.length) {
    let end: number
    if (raw[start] === '"') {
      const close = raw.indexOf('"', start + 1)
      if (close < 0) return undefined
      end = close + 1
    } else {
      const comma = raw.indexOf(", ", start)
      end = comma < 0 ? raw.length : comma
    }
    terms.push(raw.slice(start, end))
    if (end === raw.length) break
    if (!raw.startsWith(", ", end)) return undefined
    start = end + 2
  }
  return terms
}

const parseFacts = (source: string): Facts | undefined => {
  let peerId: string | undefined
  let role: string | undefined
  let expiresAtMs: number | undefined
  const labels: Record<string, string> = {}
  let issuer: string | undefined
  let subject: string | undefined
  let email: string | undefined
  const groups: Array<string> = []
  for (const line of source.split("\n")) {
    if (line.length === 0) continue
    const match = FACT_LINE.exec(line)
    if (match === null) return undefined
    const [, name, rawArgs] = match as unknown as [string, string, string]
    const args = splitTerms(rawArgs)
    if (args === undefined) return undefined
    const str = (i: number) => STRING_TERM.exec(args[i] ?? "")?.[1]
    switch (name) {
      case "node":
        if (peerId !== undefined) return undefined
        peerId = str(0)
        break
      case "role":
        if (role !== undefined) return undefined
        role = str(0)
        break
      case "label": {
        const k = str(0)
        const v = str(1)
        if (k === undefined || v === undefined) return undefined
        labels[k] = v
        break
      }
      case "expiration":
        expiresAtMs = Date.parse(args[0] ?? "")
        break
      case "issuer":
        issuer = str(0)
        break
      case "user":
        subject = str(0)
        break
      case "email":
        email = str(0)
        break
      case "group": {
        const g = str(0)
        if (g !== undefined) groups.push(g)
        break
      }
      default:
        break
    }
  }
  if (peerId === undefined || role === undefined || expiresAtMs === undefined || Number.isNaN(expiresAtMs))
    return undefined
  const identity =
    issuer !== undefined && subject !== undefined
      ? { issuer, subject, groups, ...(email === undefined ? {} : { email }) }
      : undefined
  return { peerId, role, labels, expiresAtMs, ...(identity === undefined ? {} : { identity }) }
}

/**
 * The token with its signature chain checked under the key its root names, and that key's id; the caller frees the
 * token. Fails with `unknown_key` (no such key), `bad_signature` or `malformed`.
 */
const parseSigned = (
  bytes: Uint8Array,
  keyFor: (id: number) => Uint8Array | undefined,
): Either.Either<{ readonly token: Biscuit; readonly keyId: number | undefined }, Failure> => {
  let keyId: number | undefined
  let known = false
  try {
    const token = Biscuit.fromBytesWithProvider(bytes, (id: number | undefined | null) => {
      keyId = typeof id === "number" ? id : undefined
      const key = keyId === undefined ? undefined : keyFor(keyId)
      known = key !== undefined
      // Throwing here would panic inside the wasm module; a key nobody holds makes the check fail cleanly instead.
      return PublicKey.fromBytes(key ?? UNKNOWN_KEY, SignatureAlgorithm.Ed25519)
    })
    return Either.right({ token, keyId })
  } catch {
    if (keyId !== undefined && !known) return Either.left("unknown_key")
    return Either.left(known ? "bad_signature" : "malformed")
  }
}

/**
 * Verifies a credential. `keyFor` returns the raw public key of a live signing key id, or undefined for an unknown or
 * retired one. With `allowExpired`, an expired credential still verifies (refresh uses this; it proves freshness by
 * other means).
 */
export const verify = (
  bytes: Uint8Array,
  keyFor: (id: number) => Uint8Array | undefined,
  nowMs: number,
  options: { readonly allowExpired?: boolean } = {},
): Either.Either<Verified, Failure> => {
  const parsed = parseSigned(bytes, keyFor)
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  const { token, keyId } = parsed.right
  try {
    if (token.countBlocks() !== 1) return Either.left("attenuated")
    const facts = parseFacts(token.getBlockSource(0))
    if (facts === undefined || keyId === undefined) return Either.left("malformed")
    // The expiry check an authorizer would run (`time($t), expiration($e), $t <= $e`), done on the parsed fact: the
    // single block is ours, so it holds no other checks to run, and this saves a Datalog evaluation per request.
    if (options.allowExpired !== true && nowMs > facts.expiresAtMs) return Either.left("expired")
    return Either.right({ facts, keyId })
  } finally {
    token.free()
  }
}

/** A credential with blocks appended after its authority block (an agent token), its signatures checked. */
export interface Opened {
  readonly facts: Facts
  readonly keyId: number
  /** The Datalog source of each block after the authority block, in order. */
  readonly blocks: ReadonlyArray<string>
  /** The authority block's revocation id (hex): what an appended block binds itself to. */
  readonly authorityId: string
}

/**
 * Checks the signature chain of a credential that may carry appended blocks and reads its authority facts; the
 * caller reads and checks the appended blocks (the expiry is not checked here). Fails like `verify`.
 */
export const open = (
  bytes: Uint8Array,
  keyFor: (id: number) => Uint8Array | undefined,
): Either.Either<Opened, Failure> => {
  const parsed = parseSigned(bytes, keyFor)
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  const { token, keyId } = parsed.right
  try {
    const facts = parseFacts(token.getBlockSource(0))
    if (facts === undefined || keyId === undefined) return Either.left("malformed")
    const blocks: Array<string> = []
    for (let i = 1; i < token.countBlocks(); i++) blocks.push(token.getBlockSource(i))
    const ids = token.getRevocationIdentifiers() as ReadonlyArray<unknown>
    const authorityId = ids[0]
    if (typeof authorityId !== "string") return Either.left("malformed")
    return Either.right({ facts, keyId, blocks, authorityId })
  } finally {
    token.free()
  }
}

/**
 * Appends a block of Datalog source to a credential, as any holder of it can (biscuit attenuation); the credential's
 * signature is checked first, under `keyFor`.
 */
export const append = (
  bytes: Uint8Array,
  keyFor: (id: number) => Uint8Array | undefined,
  source: string,
): Either.Either<Uint8Array, Failure> => {
  let token: Biscuit
  try {
    token = Biscuit.fromBytesWithProvider(bytes, (id: number | undefined | null) =>
      PublicKey.fromBytes((typeof id === "number" ? keyFor(id) : undefined) ?? UNKNOWN_KEY, SignatureAlgorithm.Ed25519),
    )
  } catch {
    return Either.left("bad_signature")
  }
  try {
    const block = new BlockBuilder()
    block.addCode(source)
    const out = token.appendBlock(block)
    try {
      return Either.right(out.toBytes())
    } finally {
      out.free()
    }
  } finally {
    token.free()
  }
}

/**
 * The root key id a credential names, read without verifying it (a member asks which of the control plane's keys
 * signed its own credential); undefined when the bytes are not a biscuit or name no key id.
 */
export const rootKeyIdOf = (bytes: Uint8Array): number | undefined => {
  let keyId: number | undefined
  try {
    Biscuit.fromBytesWithProvider(bytes, (id: number | undefined | null) => {
      keyId = typeof id === "number" ? id : undefined
      return PublicKey.fromBytes(UNKNOWN_KEY, SignatureAlgorithm.Ed25519)
    }).free()
  } catch {
    // The signature check fails against the stand-in key: expected, the id was read before it.
  }
  return keyId
}

/** The credential as text: standard base64, padded. */
export const toText = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")

/** Parses credential text; accepts standard or URL-safe base64, padded or not. */
export const fromText = (text: string): Either.Either<Uint8Array, string> => {
  const trimmed = text.trim()
  if (trimmed.length === 0 || trimmed.length % 4 === 1 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) {
    return Either.left("credential is not base64")
  }
  return Either.right(new Uint8Array(Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64")))
}
