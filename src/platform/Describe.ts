/**
 * An error as one short line for a log or an error message: its message (never its stack), whitespace folded, cut
 * at `max`. What a peer, a backend or a child process said reaches logs through here, so it stays bounded and cannot
 * start a log line of its own.
 */
export const describe = (error: unknown, max = 200): string =>
  (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").trim().slice(0, max) || "failed"
