/**
 * libp2p's logging off, unless `DEBUG` asks for it (libp2p's own switch, read by the `debug` package). libp2p makes
 * loggers as it goes, several for every stream (the muxer's scope, the stream's, the select's), and its default one
 * builds three `debug` instances each time, asking the terminal whether stderr is a TTY for every one: about 1% of a
 * serving node's time on the proxy path, for lines nobody reads. With `DEBUG` set the default logger is kept.
 */
import type { ComponentLogger, Logger } from "@libp2p/interface"

const nothing = (): void => undefined

const silent: Logger = Object.assign(() => undefined, {
  error: nothing,
  trace: nothing,
  enabled: false,
  newScope: (): Logger => silent,
})

const quiet: ComponentLogger = { forComponent: () => silent }

/** The `logger` option for `createLibp2p`: silent, or libp2p's default (absent) when `DEBUG` is set. */
export const option = (env: NodeJS.ProcessEnv = process.env): { logger?: ComponentLogger } =>
  (env.DEBUG ?? "").trim() === "" ? { logger: quiet } : {}
