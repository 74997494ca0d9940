/**
 * V8 tuned for a long-running, mostly idle member (node or router): `--optimize-for-size` keeps the heap V8 commits
 * close to what is live. Without it a member's resident memory is about three times its live heap (about 300 MiB idle,
 * most of it heap grown while the modules load and never given back); with it about 120 MiB. On its own it also lets
 * the old generation grow only 10% past what the last full collection left before the next one, so a busy node
 * collected all the time: a small proxied request cost each node about 2.2 ms of CPU, against 1.3 with V8's
 * defaults. `--heap-growing-percent=50` lets it grow by half instead: 1.5 ms, and 2 MiB more for an idle node.
 * Code that ran once (the start, enrollment, the first of each route) is let go: no baseline compiler (Sparkplug),
 * and bytecode and baseline code unused for 2 collections flushed, about 7 MiB less for an idle node; hot code goes
 * on to the optimizing tiers either way. Measured in docs/bench-notes.md. `MESH_V8_FLAGS` replaces the default
 * (empty: V8's own defaults). Loaded by the entry points right after the runtime check, before the modules whose
 * loading grows the heap.
 */
import { setFlagsFromString } from "node:v8"

export const DEFAULT_V8_FLAGS =
  "--optimize-for-size --heap-growing-percent=50 --no-sparkplug --flush-baseline-code --bytecode-old-age=2"

const flags = process.env.MESH_V8_FLAGS ?? DEFAULT_V8_FLAGS
if (flags.trim() !== "") setFlagsFromString(flags)
