/**
 * What a member keeps across restarts: its private key, its current credential and the keys it trusts. Files in the
 * data folder (0700), each written whole with mode 0600 and renamed into place, so a crash never leaves half a file.
 * A file that is there but unreadable or malformed (edited by hand, another program's) is a MembershipError naming
 * it and what to do, never a guess. Without a data folder everything lives in memory (tests, throwaway members).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either, Option, Schema } from "effect"
import type { PublicSigningKey } from "../../domain/KeySet.js"
import { MembershipError } from "../../services/member/Membership.js"

export interface SavedCredential {
  readonly credential: Uint8Array
  readonly issuedAt: number
  readonly expiresAt: number
}

export interface MemberStore {
  readonly loadSeed: Effect.Effect<Option.Option<Uint8Array>, MembershipError>
  readonly saveSeed: (seed: Uint8Array) => Effect.Effect<void>
  readonly loadCredential: Effect.Effect<Option.Option<SavedCredential>, MembershipError>
  readonly saveCredential: (saved: SavedCredential) => Effect.Effect<void>
  readonly loadTrusted: Effect.Effect<ReadonlyArray<PublicSigningKey>, MembershipError>
  readonly saveTrusted: (keys: ReadonlyArray<PublicSigningKey>) => Effect.Effect<void>
  /** The control plane this member enrolled with, so later runs need not be told again. */
  readonly loadControlPlane: Effect.Effect<Option.Option<string>, MembershipError>
  readonly saveControlPlane: (url: string) => Effect.Effect<void>
}

const writePrivate = (path: string, content: string) => {
  const temporary = `${path}.tmp`
  writeFileSync(temporary, content, { mode: 0o600 })
  chmodSync(temporary, 0o600)
  renameSync(temporary, path)
}

const Hex = Schema.String.pipe(Schema.pattern(/^(?:[0-9a-f]{2})+$/))
const Key = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))
const IdentityFile = Schema.Struct({ seed: Key })
const CredentialFile = Schema.Struct({ credential: Hex, issuedAt: Schema.Number, expiresAt: Schema.Number })
const TrustedKeysFile = Schema.Array(
  Schema.Struct({ id: Schema.Int, publicKey: Key, retiresAt: Schema.optional(Schema.Number) }),
)
const ControlPlaneFile = Schema.Struct({ url: Schema.String })

/** What the file is, and what the operator can do about a bad one. */
const advice = {
  "identity.json": "is not a valid identity file; restore it, or remove it to enroll as a new node",
  "credential.json": "is not a valid credential file; remove it to enroll again",
  "trusted-keys.json": "is not a valid trusted-keys file; remove it to trust the key of the next enrollment",
  "control-plane.json": "is not a valid control-plane file; remove it and give --control-plane",
} as const

/** The file decoded, none when it does not exist, or a one-line MembershipError naming it. */
const readJson = <A, I>(
  path: string,
  name: keyof typeof advice,
  schema: Schema.Schema<A, I>,
): Effect.Effect<Option.Option<A>, MembershipError> =>
  Effect.suspend(() => {
    if (!existsSync(path)) return Effect.succeed(Option.none())
    const bad = new MembershipError({ reason: `${path} ${advice[name]}` })
    return Effect.try({
      try: () => readFileSync(path, "utf8"),
      catch: (error) =>
        new MembershipError({ reason: `${path} cannot be read: ${(error as Error).message.split("\n")[0]}` }),
    }).pipe(
      Effect.flatMap((text) =>
        Either.match(Schema.decodeUnknownEither(Schema.parseJson(schema))(text), {
          onLeft: () => Effect.fail(bad),
          onRight: (value) => Effect.succeed(Option.some(value)),
        }),
      ),
    )
  })

export const inDirectory = (dir: string): MemberStore => {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = (name: keyof typeof advice) => join(dir, name)
  const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex")
  const bytes = (text: string) => new Uint8Array(Buffer.from(text, "hex"))
  const read = <A, I>(name: keyof typeof advice, schema: Schema.Schema<A, I>) => readJson(file(name), name, schema)
  return {
    loadSeed: Effect.map(
      read("identity.json", IdentityFile),
      Option.map((j) => bytes(j.seed)),
    ),
    saveSeed: (seed) => Effect.sync(() => writePrivate(file("identity.json"), JSON.stringify({ seed: hex(seed) }))),
    loadCredential: Effect.map(
      read("credential.json", CredentialFile),
      Option.map((j) => ({ credential: bytes(j.credential), issuedAt: j.issuedAt, expiresAt: j.expiresAt })),
    ),
    saveCredential: (saved) =>
      Effect.sync(() =>
        writePrivate(
          file("credential.json"),
          JSON.stringify({ credential: hex(saved.credential), issuedAt: saved.issuedAt, expiresAt: saved.expiresAt }),
        ),
      ),
    loadTrusted: Effect.map(
      read("trusted-keys.json", TrustedKeysFile),
      Option.match({
        onNone: () => [],
        onSome: (keys) => keys.map((k) => ({ id: k.id, publicKey: bytes(k.publicKey), retiresAt: k.retiresAt })),
      }),
    ),
    saveTrusted: (keys) =>
      Effect.sync(() =>
        writePrivate(
          file("trusted-keys.json"),
          JSON.stringify(keys.map((k) => ({ id: k.id, publicKey: hex(k.publicKey), retiresAt: k.retiresAt }))),
        ),
      ),
    loadControlPlane: Effect.map(
      read("control-plane.json", ControlPlaneFile),
      Option.map((j) => j.url),
    ),
    saveControlPlane: (url) => Effect.sync(() => writePrivate(file("control-plane.json"), JSON.stringify({ url }))),
  }
}

export const inMemory = (): MemberStore => {
  let seed: Option.Option<Uint8Array> = Option.none()
  let credential: Option.Option<SavedCredential> = Option.none()
  let trusted: ReadonlyArray<PublicSigningKey> = []
  let controlPlane: Option.Option<string> = Option.none()
  return {
    loadSeed: Effect.sync(() => seed),
    saveSeed: (s) =>
      Effect.sync(() => {
        seed = Option.some(s)
      }),
    loadCredential: Effect.sync(() => credential),
    saveCredential: (c) =>
      Effect.sync(() => {
        credential = Option.some(c)
      }),
    loadTrusted: Effect.sync(() => trusted),
    saveTrusted: (k) =>
      Effect.sync(() => {
        trusted = k
      }),
    loadControlPlane: Effect.sync(() => controlPlane),
    saveControlPlane: (url) =>
      Effect.sync(() => {
        controlPlane = Option.some(url)
      }),
  }
}
