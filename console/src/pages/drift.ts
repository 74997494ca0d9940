/**
 * Tool changes: definitions of tools that nodes found changed against their pin (a rug pull, or another member
 * publishing the same name: shadowing). Each open report shows the old and the new definition side by side, as
 * pretty-printed canonical JSON with the characters a reader would not see spelled out, and their line diff; the
 * operator approves the new definition (a pin in the policy, which every node reads at its next policy sync), bans
 * the member that provides it, or dismisses the report.
 */
import { reveal } from "../../../src/domain/HiddenText.js"
import { ApiError, type Success } from "../api.js"
import type { PageContext } from "../context.js"
import { diffLines } from "../diff.js"
import { fill, h, uid } from "../dom.js"
import { labelPairs, plural, shortId } from "../format.js"
import {
  announce,
  button,
  card,
  chip,
  confirm,
  diffView,
  empty,
  loadInto,
  messageOf,
  mono,
  notice,
  pageHeader,
  stateBadge,
  table,
  time,
} from "../ui.js"

type Report = Success<"adminToolDrift", "list">[number]

/** A definition as the operator reads it: canonical JSON, indented, hidden characters shown as `\u{...}`. */
export const pretty = (definition: string | null): string | undefined => {
  if (definition === null) return undefined
  try {
    return reveal(JSON.stringify(JSON.parse(definition), null, 2))
  } catch {
    return reveal(definition)
  }
}

const AGAINST: Record<Report["against"], string> = {
  policy: "the policy's pin",
  first_use: "the node's first-use pin",
}

const definitionPanel = (title: string, fingerprint: string, text: string | undefined, side: "old" | "new") =>
  h(
    "div",
    { class: "drift-side", "data-side": side },
    h("h3", null, title),
    mono(fingerprint),
    text === undefined
      ? h("p", { class: "muted" }, "Not available: the node held none, or it was larger than 64 KiB.")
      : h("pre", { class: "example drift-definition", "aria-label": `${title} definition` }, text),
  )

const diffOf = (before: string, after: string) => {
  const lines = diffLines(before, after)
  const added = lines.filter((l) => l.kind === "added").length
  const removed = lines.filter((l) => l.kind === "removed").length
  return [
    h("p", { class: "muted" }, `${plural(added, "line")} added, ${removed} removed.`),
    diffView(lines, "Changes from the pinned definition"),
  ]
}

export const render = (root: HTMLElement, context: PageContext): void => {
  const { client } = context
  const messages = h("div", { class: "messages", "aria-live": "polite" })
  const body = h("div", { class: "page-body" })

  const load = () => client.call("adminToolDrift", "list", { urlParams: { status: "all" } })
  const refresh = () => loadInto(body, load, view, { quiet: true })

  const failed = (what: string, error: unknown) => {
    fill(
      messages,
      notice(
        error instanceof ApiError && error.code === "conflict" ? "warn" : "error",
        `Could not ${what}: ${messageOf(error)}`,
      ),
    )
  }

  const approve = async (report: Report, forLabels: boolean) => {
    fill(messages)
    try {
      const answer = await client.call("adminToolDrift", "approve", {
        path: { id: report.id },
        payload: { for_provider_labels: forLabels },
      })
      announce(
        `Approved ${report.tool}: policy version ${answer.policy_version} pins it; nodes use it from their next policy sync.`,
      )
    } catch (error) {
      failed(`approve ${report.tool}`, error)
    }
    await refresh()
  }

  const ban = async (report: Report) => {
    fill(messages)
    const sure = await confirm({
      title: "Ban this member?",
      body: [
        "The node ",
        mono(shortId(report.provider_peer_id), report.provider_peer_id),
        " that provides this definition loses its place in the mesh at once: every member refuses it.",
      ],
      confirmLabel: "Ban member",
      danger: true,
    })
    if (!sure) return
    try {
      await client.call("adminNodes", "revoke", { payload: { peer_id: report.provider_peer_id } })
      await client.call("adminToolDrift", "dismiss", { path: { id: report.id } }).catch(() => undefined)
      announce(`Banned ${shortId(report.provider_peer_id)}.`)
    } catch (error) {
      failed(`ban ${shortId(report.provider_peer_id)}`, error)
    }
    await refresh()
  }

  const dismiss = async (report: Report) => {
    fill(messages)
    try {
      await client.call("adminToolDrift", "dismiss", { path: { id: report.id } })
      announce(`Dismissed the report on ${report.tool}; nodes keep refusing the changed definition in enforce mode.`)
    } catch (error) {
      failed(`dismiss the report on ${report.tool}`, error)
    }
    await refresh()
  }

  const openReport = (report: Report) => {
    const before = pretty(report.old_definition)
    const after = pretty(report.new_definition)
    const labels = labelPairs(report.provider_labels)
    const onlyLabelled = uid("drift-labels")
    const checkbox = h("input", { type: "checkbox", id: onlyLabelled })
    return h(
      "article",
      { class: "drift-report", "data-report": report.id },
      h(
        "header",
        { class: "drift-head" },
        h("h2", null, report.tool),
        h(
          "p",
          { class: "muted" },
          "Provided by ",
          mono(shortId(report.provider_peer_id), report.provider_peer_id),
          labels.length === 0
            ? null
            : [
                " ",
                h(
                  "span",
                  { class: "chips" },
                  labels.map((l) => chip(l)),
                ),
              ],
          ", found changed against ",
          AGAINST[report.against],
          " by ",
          mono(shortId(report.reporter_peer_id), report.reporter_peer_id),
          report.reports > 1 ? ` (${plural(report.reports, "report")})` : "",
          ", ",
          time(report.last_reported_at),
          ".",
        ),
      ),
      h(
        "div",
        { class: "grid-2 drift-sides" },
        definitionPanel("Pinned", report.old_fingerprint, before, "old"),
        definitionPanel("Now offered", report.new_fingerprint, after, "new"),
      ),
      before === undefined || after === undefined ? null : diffOf(before, after),
      h(
        "div",
        { class: "button-row" },
        button("Approve", () => approve(report, checkbox.checked), {
          variant: "primary",
          busyLabel: "Approving…",
          attributes: { "aria-label": `Approve the new definition of ${report.tool}` },
        }),
        labels.length === 0
          ? null
          : h(
              "label",
              { class: "inline-check", for: onlyLabelled },
              checkbox,
              ` only for providers labelled ${labels.join(", ")}`,
            ),
        button("Ban member", () => ban(report), {
          variant: "danger",
          busyLabel: "Banning…",
          attributes: { "aria-label": `Ban ${report.provider_peer_id}` },
        }),
        button("Dismiss", () => dismiss(report), {
          variant: "ghost",
          busyLabel: "Dismissing…",
          attributes: { "aria-label": `Dismiss the report on ${report.tool}` },
        }),
      ),
    )
  }

  const view = (reports: ReadonlyArray<Report>) => {
    const open = reports.filter((r) => r.status === "open")
    const resolved = reports.filter((r) => r.status !== "open").slice(0, 20)
    return [
      card(
        `Waiting (${open.length})`,
        open.length === 0
          ? empty(
              "No changed tools",
              "When a node sees a tool's definition change from its pin, the old and new definitions appear here.",
            )
          : open.map(openReport),
      ),
      card(
        "Recently resolved",
        resolved.length === 0
          ? empty("None yet", "Approved and dismissed reports are listed here.")
          : table(
              "Recently resolved tool changes",
              [
                { title: "Tool", cell: (r) => mono(r.tool) },
                { title: "Provider", cell: (r) => mono(shortId(r.provider_peer_id), r.provider_peer_id) },
                { title: "Decision", cell: (r) => stateBadge(r.status) },
                { title: "By", cell: (r) => r.resolved_by ?? "—" },
                { title: "When", cell: (r) => time(r.resolved_at) },
              ],
              resolved,
              { rowAttributes: (r) => ({ "data-report": r.id }) },
            ),
      ),
    ]
  }

  root.append(
    pageHeader(
      "Tool changes",
      "Tool definitions that changed after they were pinned",
      button("Refresh", () => refresh().then(() => undefined), { busyLabel: "Refreshing…" }),
    ),
    messages,
    body,
  )
  void loadInto(body, load, view)
}
