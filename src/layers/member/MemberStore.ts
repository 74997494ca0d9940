/**
 * What a member keeps across restarts: its private key, its current credential and the keys it trusts. Files in the
 * data folder (0700), each written whole with mode 0600 and renamed into place, so a crash never leaves half a file.
 * Without a data folder everything lives in memory (tests, throwaway members).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Option } from "effect"
import type { PublicSigningKey } from "../../domain/KeySet.js"

export interface SavedCredential {
  readonly credential: Uint8Array
  readonly issuedAt: number
  readonly expiresAt: number
}

export interface MemberStore {
  readonly loadSeed: Effect.Effect<Option.Option<Uint8Array>>
  readonly saveSeed: (seed: Uint8Array) => Effect.Effect<void>
  readonly loadCredential: Effect.Effect<Option.Option<SavedCredential>>
  readonly saveCredential: (saved: SavedCredential) => Effect.Effect<void>
  readonly loadTrusted: Effect.Effect<ReadonlyArray<PublicSigningKey>>
  readonly saveTrusted: (keys: ReadonlyArray<PublicSigningKey>) => Effect.Effect<void>
  /** The control plane this member enrolled with, so later runs need not be told again. */
  readonly loadControlPlane: Effect.Effect<Option.Option<string>>
  readonly saveControlPlane: (url: string) => Effect.Effect<void>
}

const writePrivate = (path: string, content: string) => {
  const temporary = `${path}.tmp`
  writeFileSync(temporary, content, { mode: 0o600 })
  chmodSync(temporary, 0o600)
  renameSync(temporary, path)
}

const readJson = <A>(path: string): Option.Option<A> =>
  existsSync(path) ? Option.some(JSON.parse(readFileSync(path, "utf8")) as A) : Option.none()

export const inDirectory = (dir: string): MemberStore => {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = (name: string) => join(dir, name)
  const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex")
  const bytes = (text: string) => new Uint8Array(Buffer.from(text, "hex"))
  return {
    loadSeed: Effect.sync(() => Option.map(readJson<{ seed: string }>(file("identity.json")), (j) => bytes(j.seed))),
    saveSeed: (seed) => Effect.sync(() => writePrivate(file("identity.json"), JSON.stringify({ seed: hex(seed) }))),
    loadCredential: Effect.sync(() =>
      Option.map(
        readJson<{ credential: string; issuedAt: number; expiresAt: number }>(file("credential.json")),
        (j) => ({
          credential: bytes(j.credential),
          issuedAt: j.issuedAt,
          expiresAt: j.expiresAt,
        }),
      ),
    ),
    saveCredential: (saved) =>
      Effect.sync(() =>
        writePrivate(
          file("credential.json"),
          JSON.stringify({ credential: hex(saved.credential), issuedAt: saved.issuedAt, expiresAt: saved.expiresAt }),
        ),
      ),
    loadTrusted: Effect.sync(() =>
      Option.match(readJson<Array<{ id: number; publicKey: string }>>(file("trusted-keys.json")), {
        onNone: () => [],
        onSome: (keys) => keys.map((k) => ({ id: k.id, publicKey: bytes(k.publicKey) })),
      }),
    ),
    saveTrusted: (keys) =>
      Effect.sync(() =>
        writePrivate(
          file("trusted-keys.json"),
          JSON.stringify(keys.map((k) => ({ id: k.id, publicKey: hex(k.publicKey) }))),
        ),
      ),
    loadControlPlane: Effect.sync(() =>
      Option.map(readJson<{ url: string }>(file("control-plane.json")), (j) => j.url),
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
