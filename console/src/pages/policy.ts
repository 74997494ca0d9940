/**
 * Policy: the mesh policy as JSON (protojson of PolicyConfigUpdateRequest). A change is reviewed as a diff against
 * the current policy before it is saved; when `POST /policies` refuses it, the reason stands next to the editor with
 * the text it names selected, and the current policy stays as it was.
 */
import type { PolicyUpdateJson } from "../../../src/http/policies/PolicyJson.js"
import type { AdminStatus, PageContext } from "../context.js"
import { diffLines, hasChanges } from "../diff.js"
import { fill, h } from "../dom.js"
import { plural } from "../format.js"
import { announce, button, card, diffView, loadInto, messageOf, notice, pageHeader, time } from "../ui.js"

type Policy = AdminStatus["policy"]

const pretty = (document: unknown): string => JSON.stringify(document ?? {}, null, 2)

/** Line and column (1-based) of a character offset. */
const lineOf = (text: string, offset: number) => {
  const before = text.slice(0, offset).split("\n")
  return { line: before.length, column: (before[before.length - 1]?.length ?? 0) + 1 }
}

const EXAMPLE = `{
  "roles": [
    {
      "name": "mesh:role:node",
      "allowedServices": ["mcp://*"],
      "allowedLabels": ["zone=*"]
    },
    { "name": "mesh:role:router" }
  ],
  "bindings": [
    {
      "role": "mesh:role:node",
      "members": ["group:eng*"]
    }
  ]
}`

export const render = (root: HTMLElement, context: PageContext): void => {
  const { client } = context
  let current: Policy | undefined
  const subtitle = h("span", null, "")
  const editor = h("textarea", {
    class: "editor",
    rows: "22",
    spellcheck: "false",
    autocomplete: "off",
    "aria-label": "Policy JSON",
    "aria-describedby": "policy-problem",
    "aria-invalid": "false",
  })
  const problem = h("div", { id: "policy-problem", class: "field-problem", "aria-live": "assertive" })
  const review = h("div", { class: "review", "aria-live": "polite" })
  const body = h("div", { class: "page-body" })

  const showProblem = (message: string, at?: { start: number; end: number }) => {
    editor.setAttribute("aria-invalid", "true")
    const where = at === undefined ? null : lineOf(editor.value, at.start)
    fill(
      problem,
      notice(
        "error",
        h("strong", null, where === null ? "Not saved. " : `Not saved: line ${where.line}, column ${where.column}. `),
        /[.!?]$/.test(message) ? message : `${message}.`,
        current === undefined ? null : ` The current policy (version ${current.version}) is unchanged.`,
      ),
    )
    if (at !== undefined) {
      editor.focus()
      editor.setSelectionRange(at.start, at.end)
    }
  }
  const clearProblem = () => {
    editor.setAttribute("aria-invalid", "false")
    fill(problem)
  }

  /**
   * Where a refusal points (`role "x": allowed label "y" …`): each quoted name is looked for after the one before
   * it, and the last found, the most specific, is selected.
   */
  const locate = (message: string) => {
    let found: { start: number; end: number } | undefined
    for (const [, quoted] of message.matchAll(/"([^"]+)"/g)) {
      if (quoted === undefined) continue
      const at = editor.value.indexOf(`"${quoted}"`, found?.end ?? 0)
      if (at >= 0) found = { start: at + 1, end: at + 1 + quoted.length }
    }
    return found
  }

  const parse = (): PolicyUpdateJson | undefined => {
    try {
      const value: unknown = JSON.parse(editor.value)
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        showProblem("The policy must be a JSON object with roles and bindings.")
        return undefined
      }
      return value as PolicyUpdateJson
    } catch (error) {
      const text = error instanceof Error ? error.message : "invalid JSON"
      const position = /position (\d+)/.exec(text)
      const offset = position === null ? undefined : Number(position[1])
      showProblem(
        `This is not valid JSON: ${text.replace(/\s*\(line \d+ column \d+\)/, "").replace(/ in JSON at position \d+/, "")}.`,
        offset === undefined ? undefined : { start: offset, end: offset + 1 },
      )
      return undefined
    }
  }

  const save = async (policy: PolicyUpdateJson) => {
    try {
      await client.savePolicy(policy)
    } catch (error) {
      fill(review)
      const message = messageOf(error)
      showProblem(message, locate(message))
      return
    }
    fill(review)
    await refresh()
    announce(`Policy saved: version ${current?.version ?? "?"}.`)
    fill(problem, notice("success", `Saved. The mesh now runs version ${current?.version ?? "?"} of the policy.`))
  }

  const showReview = () => {
    clearProblem()
    fill(review)
    const policy = parse()
    if (policy === undefined || current === undefined) return
    const before = pretty(current.document)
    const after = pretty(policy)
    const lines = diffLines(before, after)
    if (!hasChanges(lines)) {
      fill(review, notice("info", "No changes: this is the current policy."))
      return
    }
    const added = lines.filter((l) => l.kind === "added").length
    const removed = lines.filter((l) => l.kind === "removed").length
    fill(
      review,
      h(
        "section",
        { class: "review-panel", "aria-labelledby": "review-title" },
        h("h2", { id: "review-title" }, "Review the change"),
        h(
          "p",
          { class: "muted" },
          `${plural(added, "line")} added, ${removed} removed, against version ${current.version}.`,
        ),
        diffView(lines, "Changes against the current policy"),
        h(
          "div",
          { class: "button-row" },
          button("Save policy", () => save(policy), { variant: "primary", busyLabel: "Saving…" }),
          button(
            "Keep editing",
            () => {
              fill(review)
              editor.focus()
            },
            { variant: "ghost" },
          ),
        ),
      ),
    )
    review.scrollIntoView({ block: "nearest" })
  }

  const load = async () => {
    const status = await client.call("adminStatus", "status", {})
    context.setPending(status.counts.pending_enrollments)
    return status.policy
  }
  const view = (policy: Policy) => {
    current = policy
    editor.value = pretty(policy.document)
    fill(
      subtitle,
      policy.updated_at === null
        ? "No policy yet: a new control plane grants nothing until one is saved."
        : ["Version ", String(policy.version), ", saved ", time(policy.updated_at)],
    )
    return null
  }
  const refresh = () => loadInto(body, load, view, { quiet: current !== undefined })

  editor.addEventListener("input", () => {
    if (editor.getAttribute("aria-invalid") === "true") clearProblem()
  })

  root.append(
    pageHeader("Policy", subtitle),
    body,
    h(
      "div",
      { class: "policy-layout" },
      card(
        "Edit",
        editor,
        problem,
        h(
          "div",
          { class: "button-row" },
          button("Review changes", showReview, { variant: "primary" }),
          button(
            "Revert to current",
            () => {
              clearProblem()
              fill(review)
              editor.value = pretty(current?.document)
            },
            { variant: "ghost" },
          ),
        ),
        review,
      ),
      card(
        "How a policy reads",
        h(
          "p",
          null,
          h("strong", null, "roles"),
          " say what a role's holders may carry and reach: ",
          h("code", null, "allowedLabels"),
          " (",
          h("code", null, "*"),
          ", ",
          h("code", null, "key=*"),
          ", ",
          h("code", null, "key=value"),
          "), ",
          h("code", null, "allowedServices"),
          " and ",
          h("code", null, "allowedTargets"),
          ".",
        ),
        h(
          "p",
          null,
          h("strong", null, "bindings"),
          " say who holds a role: ",
          h("code", null, "mesh:system:authenticated"),
          ", ",
          h("code", null, "user:"),
          ", ",
          h("code", null, "email:"),
          ", ",
          h("code", null, "group:"),
          " (one leading or trailing ",
          h("code", null, "*"),
          ") or ",
          h("code", null, "node:<peer id>"),
          ".",
        ),
        h("p", { class: "muted" }, "The policy is replaced as a whole; unknown fields are refused."),
        h("pre", { class: "example" }, EXAMPLE),
      ),
    ),
  )
  void refresh()
}
