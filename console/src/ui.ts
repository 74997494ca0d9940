/** The console's building blocks: buttons with busy states, badges, tables that fold into cards on a phone, notices. */
import { ApiError } from "./api.js"
import { type DiffLine, fold } from "./diff.js"
import { type Child, fill, h, uid } from "./dom.js"
import { absolute, fromNow, plural } from "./format.js"

export type Tone = "good" | "warn" | "bad" | "neutral" | "info"

export const badge = (text: string, tone: Tone = "neutral"): HTMLElement =>
  h("span", { class: `badge badge-${tone}` }, text)

const STATE_TONES: Readonly<Record<string, Tone>> = {
  admitted: "good",
  active: "good",
  approved: "good",
  pending: "warn",
  expired: "warn",
  exhausted: "neutral",
  disabled: "warn",
  banned: "bad",
  revoked: "bad",
  rejected: "bad",
}

export const stateBadge = (state: string): HTMLElement => badge(state, STATE_TONES[state] ?? "neutral")

export const chip = (text: string, attributes: Record<string, string> = {}): HTMLElement =>
  h("span", { class: "chip", ...attributes }, text)

/** A time as "3 hours ago", the exact time on hover and for screen readers. */
export const time = (iso: string | null, none = "—"): Child =>
  iso === null ? h("span", { class: "muted" }, none) : h("time", { datetime: iso, title: absolute(iso) }, fromNow(iso))

/** Code-like text; with `title` (the whole value behind a shortened one) it never wraps. */
export const mono = (text: string, title?: string): HTMLElement =>
  h("code", { class: title === undefined ? "mono" : "mono nowrap", ...(title === undefined ? {} : { title }) }, text)

/** In words, whatever failed. */
export const messageOf = (error: unknown): string =>
  error instanceof ApiError ? error.message : error instanceof Error ? error.message : "Something went wrong."

export const notice = (tone: "error" | "success" | "info" | "warn", ...children: ReadonlyArray<Child>) =>
  h("div", { class: `notice notice-${tone}`, role: tone === "error" ? "alert" : "status" }, children)

export interface ButtonOptions {
  readonly variant?: "primary" | "danger" | "ghost" | "default"
  readonly type?: "button" | "submit"
  readonly busyLabel?: string
  readonly title?: string
  readonly disabled?: boolean
  readonly attributes?: Record<string, string>
}

/**
 * A button whose action may take a while: while it runs the button is disabled and says so (`busyLabel`), so a
 * second click cannot send the request twice.
 */
export const button = (
  label: string,
  action: ((event: Event) => void | Promise<void>) | null,
  options: ButtonOptions = {},
): HTMLButtonElement => {
  const element = h(
    "button",
    {
      type: options.type ?? "button",
      class: `button button-${options.variant ?? "default"}`,
      title: options.title,
      disabled: options.disabled === true,
      ...options.attributes,
    },
    label,
  )
  if (action !== null) {
    element.addEventListener("click", (event) => {
      void runBusy(element, options.busyLabel ?? label, () => action(event))
    })
  }
  return element
}

export const runBusy = async (element: HTMLButtonElement, busyLabel: string, work: () => void | Promise<void>) => {
  if (element.disabled) return
  const label = element.textContent ?? ""
  element.disabled = true
  element.setAttribute("aria-busy", "true")
  element.textContent = busyLabel
  try {
    await work()
  } finally {
    element.disabled = false
    element.removeAttribute("aria-busy")
    element.textContent = label
  }
}

export interface Column<Row> {
  readonly title: string
  readonly cell: (row: Row) => Child
  readonly className?: string
}

/** A table; under a phone's width each row becomes a card whose cells carry their column's title. */
export const table = <Row>(
  caption: string,
  columns: ReadonlyArray<Column<Row>>,
  rows: ReadonlyArray<Row>,
  options: { readonly rowAttributes?: (row: Row) => Record<string, string> } = {},
): HTMLElement =>
  h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "table" },
      h("caption", { class: "visually-hidden" }, caption),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          columns.map((c) => h("th", { scope: "col", class: c.className }, c.title)),
        ),
      ),
      h(
        "tbody",
        null,
        rows.map((row) =>
          h(
            "tr",
            options.rowAttributes?.(row) ?? null,
            columns.map((c) => h("td", { "data-label": c.title, class: c.className }, c.cell(row))),
          ),
        ),
      ),
    ),
  )

export const empty = (title: string, text: string): HTMLElement =>
  h("div", { class: "empty" }, h("p", { class: "empty-title" }, title), h("p", { class: "muted" }, text))

export const loading = (text = "Loading…"): HTMLElement =>
  h("div", { class: "loading", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), text)

/** A labelled form control, with an optional hint tied to it for screen readers. */
export const field = (
  label: string,
  control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  hint?: string,
): HTMLElement => {
  control.id = control.id === "" ? uid("field") : control.id
  const hintId = hint === undefined ? undefined : `${control.id}-hint`
  if (hintId !== undefined) control.setAttribute("aria-describedby", hintId)
  const hintElement = hint === undefined ? null : h("p", { class: "hint", id: hintId }, hint)
  if (control instanceof HTMLInputElement && control.type === "checkbox") {
    return h(
      "div",
      { class: "field field-check" },
      h("div", { class: "check-row" }, control, h("label", { for: control.id }, label)),
      hintElement,
    )
  }
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintElement)
}

/** The page's heading row: title, a line of context, actions on the right. */
export const pageHeader = (title: string, subtitle: Child, ...actions: ReadonlyArray<Child>): HTMLElement =>
  h(
    "header",
    { class: "page-header" },
    h("div", null, h("h1", { tabindex: "-1" }, title), subtitle === null ? null : h("p", { class: "muted" }, subtitle)),
    h("div", { class: "page-actions" }, actions),
  )

export const card = (title: string | null, ...children: ReadonlyArray<Child>): HTMLElement =>
  h("section", { class: "card" }, title === null ? null : h("h2", null, title), children)

/** Asks before something that cannot be undone; resolves true when confirmed. Escape or Cancel resolves false. */
export const confirm = (options: {
  readonly title: string
  readonly body: Child
  readonly confirmLabel: string
  readonly danger?: boolean
}): Promise<boolean> =>
  new Promise((resolve) => {
    const titleId = uid("dialog-title")
    const dialog = h("dialog", { class: "dialog", "aria-labelledby": titleId })
    const close = (answer: boolean) => {
      dialog.close()
      dialog.remove()
      resolve(answer)
    }
    fill(
      dialog,
      h("h2", { id: titleId }, options.title),
      h("div", { class: "dialog-body" }, options.body),
      h(
        "div",
        { class: "dialog-actions" },
        button("Cancel", () => close(false), { variant: "ghost" }),
        button(options.confirmLabel, () => close(true), { variant: options.danger === true ? "danger" : "primary" }),
      ),
    )
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault()
      close(false)
    })
    document.body.append(dialog)
    dialog.showModal()
  })

/** Copies `text`; where the clipboard is not available (plain HTTP off loopback), selects it for Ctrl+C instead. */
export const copyButton = (text: string, target: HTMLElement): HTMLButtonElement => {
  const element = button("Copy", null, { variant: "primary" })
  element.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text)
      element.textContent = "Copied"
      announce("Copied to the clipboard.")
    } catch {
      const range = document.createRange()
      range.selectNodeContents(target)
      const selection = window.getSelection()
      selection?.removeAllRanges()
      selection?.addRange(range)
      announce("Selected: press Ctrl+C (or ⌘C) to copy.")
    }
  })
  return element
}

/** A short message in the corner, read out by screen readers. */
export const announce = (message: string, tone: "success" | "error" = "success"): void => {
  const region = document.getElementById("toasts")
  if (region === null) return
  const toast = h("div", { class: `toast toast-${tone}` }, message)
  region.append(toast)
  // The newest two at most: a burst of actions must not cover the page.
  while (region.childElementCount > 2) region.firstElementChild?.remove()
  window.setTimeout(() => toast.remove(), 4000)
}

/**
 * Shows `view(await load())` in `target`: a loading state first (unless `quiet`, for a refresh that keeps the old
 * content until the new one is there), or the failure in words with a way to try again.
 */
export const loadInto = async <T>(
  target: HTMLElement,
  load: () => Promise<T>,
  view: (data: T) => Child,
  options: { readonly quiet?: boolean } = {},
): Promise<T | undefined> => {
  if (options.quiet !== true) fill(target, loading())
  target.setAttribute("aria-busy", "true")
  try {
    const data = await load()
    fill(target, view(data))
    return data
  } catch (error) {
    fill(
      target,
      notice(
        "error",
        h("span", null, messageOf(error)),
        button("Try again", () => {
          void loadInto(target, load, view)
        }),
      ),
    )
    return undefined
  } finally {
    target.removeAttribute("aria-busy")
  }
}

export const stat = (label: string, value: Child, detail: Child = null, href?: string): HTMLElement => {
  const body = [h("span", { class: "stat-label" }, label), h("span", { class: "stat-value" }, value), detail]
  return href === undefined ? h("div", { class: "stat" }, body) : h("a", { class: "stat stat-link", href }, body)
}

/** A line diff (diff.ts) as the console shows it: long unchanged runs folded, each change signed and named for readers. */
export const diffView = (lines: ReadonlyArray<DiffLine>, label: string): HTMLElement =>
  h(
    "pre",
    { class: "diff", "aria-label": label },
    fold(lines).map((l) =>
      l.kind === "skipped"
        ? h("span", { class: "diff-line diff-skipped" }, `  … ${plural(l.count, "unchanged line")}\n`)
        : h(
            "span",
            { class: `diff-line diff-${l.kind}` },
            h(
              "span",
              { class: "diff-sign", "aria-hidden": "true" },
              l.kind === "added" ? "+" : l.kind === "removed" ? "−" : " ",
            ),
            h("span", { class: "visually-hidden" }, l.kind === "same" ? "" : `${l.kind}: `),
            `${l.text}\n`,
          ),
    ),
  )
