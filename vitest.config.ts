import { availableParallelism, setPriority } from "node:os"
import { defineConfig } from "vitest/config"
import Sequencer from "./test/support/Sequencer.js"

// The runner's own process answers every worker's reports, and a worker whose report waits 60 s fails the run. With
// five workers and their meshes on two cores it could starve for that long: it runs ahead of them (as root, which CI
// is; elsewhere this is a no-op), and each worker drops back to the normal priority (test/setup.ts).
try {
  setPriority(-5)
} catch {}

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["./test/setup.ts"],
    globalSetup: ["./test/support/globalSetup.ts", "./test/support/buildPrograms.ts"],
    pool: "forks",
    poolOptions: {
      // More workers than cores: most files wait on processes, sockets and real time (docs/decisions.md, "Tests").
      forks: { maxForks: 2 * availableParallelism() + 1, minForks: 1 },
    },
    sequence: { sequencer: Sequencer },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default", "./test/support/DatabaseReporter.ts", "./test/support/TimingReporter.ts"],
  },
})
