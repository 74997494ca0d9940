import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"
import Sequencer from "./test/support/Sequencer.js"

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
