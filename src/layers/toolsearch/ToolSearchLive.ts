/**
 * ToolSearch over one minisearch index held for the life of the layer. The index is a mutable resource (as a
 * database handle is); which documents each (peer, service) holds is state in a Ref, and every change to both runs
 * under one permit, so a search never sees half a replacement. At most MAX_TOOLS tools are indexed; past that a new
 * listing is cut to what fits.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Layer, Ref } from "effect"
import { ToolSearch } from "../../services/toolsearch/ToolSearch.js"
import * as ToolIndex from "./ToolIndex.js"

export const MAX_TOOLS = 20_000

const keyOf = (peerId: string, service: string) => `${peerId}/${service}`

export const layer = Layer.effect(
  ToolSearch,
  Effect.gen(function* () {
    const index = ToolIndex.make()
    /** `<peer>/<service>` → the ids of its documents in the index. */
    const held = yield* Ref.make<ReadonlyMap<string, ReadonlyArray<string>>>(new Map())
    const permit = yield* Effect.makeSemaphore(1)

    const drop = (ids: ReadonlyArray<string>) => Effect.sync(() => index.discardAll(ids.filter((id) => index.has(id))))

    const replace = (peerId: string, service: string, tools: ReadonlyArray<Tool>) =>
      permit.withPermits(1)(
        Effect.gen(function* () {
          const key = keyOf(peerId, service)
          const map = yield* Ref.get(held)
          yield* drop(map.get(key) ?? [])
          const room = Math.max(0, MAX_TOOLS - index.documentCount)
          const seen = new Set<string>()
          const documents: Array<ToolIndex.Document> = []
          for (const tool of tools) {
            if (documents.length >= room) break
            const doc = ToolIndex.document(peerId, service, tool)
            if (seen.has(doc.id)) continue
            seen.add(doc.id)
            documents.push(doc)
          }
          yield* Effect.sync(() => index.addAll(documents))
          const next = new Map(map)
          if (documents.length > 0)
            next.set(
              key,
              documents.map((d) => d.id),
            )
          else next.delete(key)
          yield* Ref.set(held, next)
        }),
      )

    const forget = (peerId: string, service?: string) =>
      permit.withPermits(1)(
        Effect.gen(function* () {
          const map = yield* Ref.get(held)
          const keys =
            service === undefined ? [...map.keys()].filter((k) => k.startsWith(`${peerId}/`)) : [keyOf(peerId, service)]
          yield* drop(keys.flatMap((k) => map.get(k) ?? []))
          const next = new Map(map)
          for (const k of keys) next.delete(k)
          yield* Ref.set(held, next)
        }),
      )

    const search = (
      intent: string,
      options: { readonly limit: number; readonly keep?: (peerId: string, service: string) => boolean },
    ) =>
      permit.withPermits(1)(
        Effect.sync(() =>
          ToolIndex.search(index, intent, options.limit, (hit) => options.keep?.(hit.peerId, hit.service) ?? true),
        ),
      )

    return ToolSearch.of({
      replace,
      forget,
      search,
      size: permit.withPermits(1)(Effect.sync(() => index.documentCount)),
    })
  }),
)
