/** Audit log: who changed what, newest first, paged, filtered by actor and action (server-side). */
import type { Request, Success } from "../api.js"
import type { PageContext } from "../context.js"
import { fill, h } from "../dom.js"
import { shortId } from "../format.js"
import { button, card, empty, field, loadInto, mono, pageHeader, table, time } from "../ui.js"

type Page = Success<"adminStatus", "audit">
type Entry = Page["entries"][number]
type Action = NonNullable<NonNullable<Request<"adminStatus", "audit">["urlParams"]>["action"]>

/** Every action the API filters by, in words; the `satisfies` makes a new action a compile error here. */
const ACTIONS = {
  "token.minted": "Token minted",
  "token.revoked": "Token revoked",
  "enrollment.approved": "Enrollment approved",
  "enrollment.rejected": "Enrollment rejected",
  "node.banned": "Node banned",
  "node.unbanned": "Node unbanned",
  "node.autonomous_recovery": "Autonomous recovery set",
  "policy.replaced": "Policy replaced",
  "tool_drift.approved": "Tool change approved",
  "tool_drift.dismissed": "Tool change dismissed",
} as const satisfies Record<Action, string>

const PAGE_SIZE = 25

const subjectOf = (entry: Entry) =>
  entry.subject.startsWith("12D3") ? mono(shortId(entry.subject), entry.subject) : mono(entry.subject)

const detailsOf = (entry: Entry) => {
  const pairs = Object.entries(entry.details)
  if (pairs.length === 0) return h("span", { class: "muted" }, "—")
  return h(
    "dl",
    { class: "details" },
    pairs.map(([k, v]) => [h("dt", null, k), h("dd", null, typeof v === "string" ? v : JSON.stringify(v))]),
  )
}

export const render = (root: HTMLElement, context: PageContext): void => {
  const { client } = context
  const actorInput = h("input", {
    list: "actor-options",
    placeholder: "operator, cli, user:…",
    autocomplete: "off",
    spellcheck: "false",
  })
  const actorOptions = h(
    "datalist",
    { id: "actor-options" },
    ["operator", "cli", "auto-approve"].map((a) => h("option", { value: a })),
  )
  const actionSelect = h(
    "select",
    null,
    h("option", { value: "" }, "Any action"),
    Object.entries(ACTIONS).map(([value, text]) => h("option", { value }, text)),
  )
  const body = h("div", { class: "page-body" })
  const pager = h("nav", { class: "pager", "aria-label": "Audit pages" })
  /** `before` cursors of the pages already seen, to go back to newer ones. */
  let cursors: Array<number | undefined> = [undefined]

  const load = (before: number | undefined) => () => {
    const actor = actorInput.value.trim()
    const action = actionSelect.value as Action | ""
    return client.call("adminStatus", "audit", {
      urlParams: {
        limit: PAGE_SIZE,
        ...(before === undefined ? {} : { before }),
        ...(actor === "" ? {} : { actor }),
        ...(action === "" ? {} : { action }),
      },
    })
  }

  const view = (page: Page) => {
    const seen = new Set([...actorOptions.querySelectorAll("option")].map((o) => o.value))
    for (const entry of page.entries) {
      if (!seen.has(entry.actor)) {
        seen.add(entry.actor)
        actorOptions.append(h("option", { value: entry.actor }))
      }
    }
    const index = cursors.length - 1
    fill(
      pager,
      button(
        "Newer",
        () => {
          cursors = cursors.slice(0, -1)
          return show()
        },
        { disabled: index === 0, busyLabel: "Loading…" },
      ),
      h("span", { class: "muted" }, `Page ${index + 1}`),
      button(
        "Older",
        () => {
          if (page.next !== null) cursors.push(page.next)
          return show()
        },
        { disabled: page.next === null, busyLabel: "Loading…" },
      ),
    )
    if (page.entries.length === 0) {
      return empty(
        "No entries",
        actorInput.value !== "" || actionSelect.value !== ""
          ? "No entry matches these filters."
          : "Changes to tokens, approvals, bans and policy are recorded here.",
      )
    }
    return table(
      "Audit entries",
      [
        { title: "When", cell: (e) => time(e.at) },
        { title: "Actor", cell: (e) => mono(e.actor) },
        { title: "Action", cell: (e) => (ACTIONS as Record<string, string>)[e.action] ?? e.action },
        { title: "Subject", cell: subjectOf },
        { title: "Details", cell: detailsOf },
      ],
      page.entries,
      { rowAttributes: (e) => ({ "data-action": e.action }) },
    )
  }

  const show = () => loadInto(body, load(cursors[cursors.length - 1]), view, { quiet: true }).then(() => undefined)
  const restart = () => {
    cursors = [undefined]
    return show()
  }

  const filters = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter the audit log" },
    field("Actor", actorInput),
    actorOptions,
    field("Action", actionSelect),
    h(
      "div",
      { class: "form-actions" },
      button("Apply", null, { type: "submit", variant: "primary" }),
      button(
        "Clear",
        () => {
          actorInput.value = ""
          actionSelect.value = ""
          return restart()
        },
        { variant: "ghost" },
      ),
    ),
  )
  filters.addEventListener("submit", (event) => {
    event.preventDefault()
    void restart()
  })
  actionSelect.addEventListener("change", () => void restart())

  root.append(
    pageHeader(
      "Audit log",
      "Every change to tokens, approvals, bans, recovery flags and policy",
      button("Refresh", () => show(), { busyLabel: "Refreshing…" }),
    ),
    card(null, filters, body, pager),
  )
  void loadInto(body, load(undefined), view)
}
