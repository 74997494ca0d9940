/**
 * The places the node keeps what only its own user may reach: the data folder (key, credential, API token), the
 * folder of the Unix socket (opening the socket is the credential) and an API token file. A node refuses to start
 * when any of them is open to its group or to others, rather than serve from a place another user can read or swap.
 */
import { mkdirSync, type Stats, statSync } from "node:fs"
import type { Server } from "node:net"
import { Either } from "effect"

/** Group and other permission bits. */
const OPEN_BITS = 0o077

/** The umask a socket is created under: 0600 from the first instant, never chmod-ed after a window. */
const SOCKET_UMASK = 0o177

const statOf = (path: string): Either.Either<Stats, string> =>
  Either.try({
    try: () => statSync(path),
    catch: (cause) => `${path}: ${(cause as NodeJS.ErrnoException).code ?? "cannot be read"}`,
  })

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, "0")

/** Fails with one line when `path` exists and is open to its group or to others. */
export const checkNotOpen = (path: string, what: string): Either.Either<void, string> =>
  Either.flatMap(statOf(path), (stat) =>
    (stat.mode & OPEN_BITS) === 0
      ? Either.void
      : Either.left(`${what} ${path} is open to its group or others (mode ${octal(stat.mode)}): chmod go-rwx it`),
  )

/**
 * A folder only this user may enter: created 0700 when missing; an existing one must be a folder this user owns,
 * closed to its group and others.
 */
export const privateFolder = (path: string, what: string): Either.Either<void, string> =>
  Either.gen(function* () {
    yield* Either.try({
      try: () => mkdirSync(path, { recursive: true, mode: 0o700 }),
      catch: (cause) => `${what} ${path}: ${(cause as NodeJS.ErrnoException).code ?? "cannot be created"}`,
    })
    const stat = yield* statOf(path)
    if (!stat.isDirectory()) return yield* Either.left(`${what} ${path} is not a folder`)
    const uid = process.getuid?.()
    if (uid !== undefined && stat.uid !== uid) {
      return yield* Either.left(`${what} ${path} belongs to another user (uid ${stat.uid})`)
    }
    return yield* checkNotOpen(path, what)
  })

/**
 * Makes `server` create its Unix socket under a umask that leaves it 0600. The socket file is made by the bind inside
 * `listen`, synchronously, so the umask is the process's only for that call: no other code runs meanwhile.
 */
export const listenPrivately = <S extends Server>(server: S): S => {
  const listen = server.listen.bind(server)
  server.listen = ((...args: Parameters<typeof listen>) => {
    const previous = process.umask(SOCKET_UMASK)
    try {
      return listen(...args)
    } finally {
      process.umask(previous)
    }
  }) as typeof server.listen
  return server
}
