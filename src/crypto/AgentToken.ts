/**
 * Agent tokens: a node's own credential with one block appended (biscuit attenuation), minted by the node offline.
 * The block holds, one statement per line:
 *
 *   agent("<id>"); agent_service("<pattern>") per service; agent_tool, agent_model, agent_method, agent_path likewise;
 *   agent_label("<k>", "<v>") per label; agent_expiration(<rfc3339>); agent_proof("<base64url signature>");
 *   check if time($time), $time <= <rfc3339>;
 *
 * Any holder of a biscuit can append a block, and a node's credential is shown to every peer it meets, so the block
 * alone proves nothing about who wrote it: `agent_proof` is the node's Ed25519 signature (its peer key, which the
 * peer id embeds) over the scope, the node's peer id and the authority block's revocation id. Verification checks the
 * biscuit's signature chain under the control plane's key, the authority facts as for any credential, that exactly
 * one block follows, that every statement of that block is one of the above (nothing is left unread), the proof
 * under the key of the peer the authority names, and both expiries. The `check` makes a standard biscuit authorizer
 * enforce the expiry too.
 */
import { Either } from "effect"
import type * as AgentScope from "../domain/AgentScope.js"
import * as PeerKey from "../domain/PeerKey.js"
import * as Biscuit from "./Biscuit.js"
import * as Ed25519 from "./Ed25519.js"

export type Failure =
  | Biscuit.Failure
  | "not_agent_token"
  | "bad_block"
  | "bad_proof"
  | "agent_expired"
  | "outlives_credential"

export interface Verified {
  readonly node: Biscuit.Facts
  readonly keyId: number
  readonly scope: AgentScope.Scope
}

/** The reason of a refusal, for error bodies and the call log: never the token. */
export const describe = (failure: Failure): string => {
  switch (failure) {
    case "malformed":
      return "the agent token is not a mesh credential"
    case "unknown_key":
      return "the agent token is signed by a key the mesh does not trust (retired or unknown)"
    case "bad_signature":
      return "the agent token's signature does not verify: it was altered"
    case "attenuated":
      return "the agent token carries more blocks than one agent block"
    case "expired":
      return "the node credential inside the agent token has expired"
    case "not_agent_token":
      return "the token carries no agent block"
    case "bad_block":
      return "the agent block holds a statement an agent token never holds"
    case "bad_proof":
      return "the agent block is not signed by the node its credential names"
    case "agent_expired":
      return "the agent token has expired"
    case "outlives_credential":
      return "the agent token claims to outlive its node credential"
  }
}

const DOMAIN = "mesh-agent-token/1"

const rfc3339 = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z")

/** What the node signs: the scope in one canonical form, the node and the credential it is appended to. */
const signed = (scope: AgentScope.Scope, peerId: string, authorityId: string): Uint8Array =>
  new TextEncoder().encode(
    JSON.stringify([
      DOMAIN,
      peerId,
      authorityId,
      scope.agent,
      [...scope.services].sort(),
      [...scope.tools].sort(),
      [...scope.models].sort(),
      [...scope.methods].sort(),
      [...scope.paths].sort(),
      Object.keys(scope.labels)
        .sort()
        .map((k) => [k, scope.labels[k]]),
      Math.floor(scope.expiresAtMs / 1000),
    ]),
  )

const statements = (scope: AgentScope.Scope): Array<string> => {
  const str = (name: string, ...values: ReadonlyArray<string>) => {
    for (const v of values) {
      if (!Biscuit.isSafeTerm(v)) throw new Error(`${name} holds a character a token cannot carry`)
    }
    return `${name}(${values.map((v) => `"${v}"`).join(", ")});`
  }
  return [
    str("agent", scope.agent),
    ...scope.services.map((p) => str("agent_service", p)),
    ...scope.tools.map((p) => str("agent_tool", p)),
    ...scope.models.map((p) => str("agent_model", p)),
    ...scope.methods.map((p) => str("agent_method", p)),
    ...scope.paths.map((p) => str("agent_path", p)),
    ...Object.keys(scope.labels)
      .sort()
      .map((k) => str("agent_label", k, scope.labels[k] as string)),
    `agent_expiration(${rfc3339(scope.expiresAtMs)});`,
  ]
}

/**
 * Appends the agent block to the node's credential. The expiry is cut to the credential's; `seed` is the node's peer
 * key, whose peer id the credential must name.
 */
export const mint = (
  credential: Uint8Array,
  keyFor: (id: number) => Uint8Array | undefined,
  seed: Uint8Array,
  request: AgentScope.Request,
  expiresAtMs: number,
): Either.Either<{ readonly token: Uint8Array; readonly scope: AgentScope.Scope }, Failure> =>
  Either.gen(function* () {
    const opened = yield* Biscuit.open(credential, keyFor)
    if (opened.blocks.length > 0) return yield* Either.left<Failure>("attenuated")
    if (PeerKey.peerIdOf(Ed25519.publicKeyOf(seed)) !== opened.facts.peerId) {
      return yield* Either.left<Failure>("bad_proof")
    }
    const expires = Math.floor(Math.min(expiresAtMs, opened.facts.expiresAtMs) / 1000) * 1000
    const scope: AgentScope.Scope = { ...request, expiresAtMs: expires }
    const proof = Buffer.from(
      Ed25519.signMessage(seed, signed(scope, opened.facts.peerId, opened.authorityId)),
    ).toString("base64url")
    const source = [
      ...statements(scope),
      `agent_proof("${proof}");`,
      `check if time($time), $time <= ${rfc3339(expires)};`,
    ].join("\n")
    const token = yield* Biscuit.append(credential, keyFor, source)
    return { token, scope }
  })

const LINE = /^([a-z_]+)\((.*)\);$/
const STRINGS = /^"([^"]*)"(?:, "([^"]*)")?$/
const DATE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/

/** The block's statements back into a scope and its proof; undefined when anything in it is not ours. */
const parse = (source: string): { readonly scope: AgentScope.Scope; readonly proof: string } | undefined => {
  let agent: string | undefined
  let expiration: string | undefined
  let checked: string | undefined
  let proof: string | undefined
  const services: Array<string> = []
  const tools: Array<string> = []
  const models: Array<string> = []
  const methods: Array<string> = []
  const paths: Array<string> = []
  const labels: Record<string, string> = {}
  for (const line of source.split("\n")) {
    if (line.length === 0) continue
    const check = /^check if time\(\$time\), \$time <= (\S+);$/.exec(line)
    if (check !== null) {
      if (checked !== undefined) return undefined
      checked = check[1]
      continue
    }
    const match = LINE.exec(line)
    if (match === null) return undefined
    const [, name, args] = match as unknown as [string, string, string]
    if (name === "agent_expiration") {
      if (expiration !== undefined || !DATE.test(args)) return undefined
      expiration = args
      continue
    }
    const terms = STRINGS.exec(args)
    if (terms === null) return undefined
    const [, first, second] = terms as unknown as [string, string, string | undefined]
    if (name === "agent_label") {
      if (second === undefined || first in labels) return undefined
      labels[first] = second
      continue
    }
    if (second !== undefined) return undefined
    switch (name) {
      case "agent":
        if (agent !== undefined) return undefined
        agent = first
        break
      case "agent_proof":
        if (proof !== undefined) return undefined
        proof = first
        break
      case "agent_service":
        services.push(first)
        break
      case "agent_tool":
        tools.push(first)
        break
      case "agent_model":
        models.push(first)
        break
      case "agent_method":
        methods.push(first)
        break
      case "agent_path":
        paths.push(first)
        break
      default:
        return undefined
    }
  }
  if (agent === undefined || proof === undefined || expiration === undefined || checked !== expiration) {
    return undefined
  }
  const expiresAtMs = Date.parse(expiration)
  if (Number.isNaN(expiresAtMs)) return undefined
  return { scope: { agent, services, tools, models, methods, paths, labels, expiresAtMs }, proof }
}

/**
 * Verifies an agent token: signatures, authority, the agent block and its proof, and that neither the credential nor
 * the agent's scope has expired at `nowMs`. Which node it must name is the caller's check.
 */
export const verify = (
  bytes: Uint8Array,
  keyFor: (id: number) => Uint8Array | undefined,
  nowMs: number,
): Either.Either<Verified, Failure> =>
  Either.flatMap(Biscuit.open(bytes, keyFor), (opened) => {
    if (opened.blocks.length === 0) return Either.left("not_agent_token")
    if (opened.blocks.length > 1) return Either.left("attenuated")
    const parsed = parse(opened.blocks[0] as string)
    if (parsed === undefined) return Either.left("bad_block")
    const key = PeerKey.publicKeyOf(opened.facts.peerId)
    if (Either.isLeft(key)) return Either.left("bad_block")
    const proof = Buffer.from(parsed.proof, "base64url")
    const message = signed(parsed.scope, opened.facts.peerId, opened.authorityId)
    if (proof.byteLength !== Ed25519.SIGNATURE_LENGTH || !Ed25519.verifySignature(key.right, message, proof)) {
      return Either.left("bad_proof")
    }
    return checkTimes({ node: opened.facts, keyId: opened.keyId, scope: parsed.scope }, nowMs)
  })

/** The time checks alone, for a token verified before (a cache of verified tokens re-runs them on every use). */
export const checkTimes = (verified: Verified, nowMs: number): Either.Either<Verified, Failure> =>
  verified.scope.expiresAtMs > verified.node.expiresAtMs
    ? Either.left("outlives_credential")
    : nowMs > verified.node.expiresAtMs
      ? Either.left("expired")
      : nowMs > verified.scope.expiresAtMs
        ? Either.left("agent_expired")
        : Either.right(verified)
