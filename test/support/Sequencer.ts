/**
 * The order test files start in. The suite runs in more workers than the machine has cores (vitest.config.ts): most
 * files spend their time waiting on processes, sockets and real time, not on a core. The longest files start first,
 * so that the run is not left waiting on one of them at the end: the soaks and multi-process meshes
 * (test/mesh/, test/scale/), then the tests that start programs or a browser (test/cli/, test/deploy/, test/demo/,
 * test/console/), then the rest. Within a tier, vitest's own order: files that failed last time, then the longest
 * last time, then (on a clean clone, which has no record) the largest.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node"

/** Folders by the tier their files start in, first tier first; a file in none of them is in the last tier. */
export const TIERS: ReadonlyArray<ReadonlyArray<string>> = [
  ["test/mesh/", "test/scale/"],
  ["test/cli/", "test/deploy/", "test/demo/", "test/console/"],
]

const tierOf = (file: string): number => {
  const tier = TIERS.findIndex((folders) => folders.some((folder) => file.includes(`/${folder}`)))
  return tier === -1 ? TIERS.length : tier
}

export default class Sequencer extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    // Array.prototype.sort is stable: vitest's order holds within a tier.
    return sorted.sort((a, b) => tierOf(a.moduleId) - tierOf(b.moduleId))
  }
}
