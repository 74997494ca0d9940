/**
 * The tokens of the agents configured in `mesh-node.yaml` (`agents:`), written to their files (0600, replaced
 * atomically) when the node becomes a member, again at half of each token's life, and whenever the node's
 * credential changes (a token is the credential plus a block: a refreshed credential needs new tokens). Minting
 * needs no control plane, so tokens are written while it is unreachable too.
 */
import { chmodSync, mkdirSync, renameSync, writeFileSync } from "node:fs"
import { dirname, isAbsolute, join } from "node:path"
import { Duration, Effect, Either, Layer, Redacted, Stream } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import * as GoDuration from "../../domain/GoDuration.js"
import type { AgentSpec } from "../../domain/NodeFile.js"
import { Agents } from "../../services/agents/Agents.js"
import { Membership } from "../../services/member/Membership.js"

export const tokenPath = (dataDir: string, agent: AgentSpec) =>
  isAbsolute(agent.token_file) ? agent.token_file : join(dataDir, agent.token_file)

const ttlOf = (agent: AgentSpec) => Either.getOrElse(GoDuration.parse(agent.ttl), () => Duration.hours(24))

const write = (path: string, token: string) =>
  Effect.try(() => {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    const temporary = `${path}.tmp`
    writeFileSync(temporary, `${token}\n`, { mode: 0o600 })
    chmodSync(temporary, 0o600)
    renameSync(temporary, path)
  })

export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const settings = yield* NodeConfig
    const agents = settings.file.agents ?? []
    if (agents.length === 0) return
    const minter = yield* Agents
    const membership = yield* Membership
    const writeAll = Effect.forEach(
      agents,
      (agent) =>
        minter.mint({ ...agent, agent: agent.id }, ttlOf(agent)).pipe(
          Effect.flatMap((minted) => write(tokenPath(settings.dataDir, agent), Redacted.value(minted.token))),
          Effect.tap(() => Effect.logDebug("agent token written").pipe(Effect.annotateLogs({ agent: agent.id }))),
          Effect.catchAll((error) =>
            Effect.logWarning("agent token not written").pipe(
              Effect.annotateLogs({ agent: agent.id, reason: String((error as { message?: unknown }).message) }),
            ),
          ),
        ),
      { discard: true },
    )
    const every = Duration.max(
      Duration.minutes(1),
      Duration.divide(agents.map(ttlOf).reduce(Duration.min), 2).pipe((d) =>
        d._tag === "Some" ? d.value : Duration.hours(12),
      ),
    )
    const changed = membership.credentialChanges.pipe(Stream.take(1), Stream.runDrain)
    yield* writeAll.pipe(
      Effect.zipRight(Effect.raceFirst(Effect.sleep(every), changed)),
      Effect.forever,
      Effect.forkScoped,
    )
  }),
)
