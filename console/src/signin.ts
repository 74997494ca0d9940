/** The sign-in screen: the admin token (operators), or the OIDC issuer (users). */
import type { Client } from "./api.js"
import { fill, h } from "./dom.js"
import * as Oidc from "./oidc.js"
import { button, field, messageOf, notice } from "./ui.js"

export interface SignInHandlers {
  /** Checks the token against the API; throws in words when it is refused. */
  readonly withAdminToken: (token: string) => Promise<void>
}

export const render = (root: HTMLElement, client: Client, handlers: SignInHandlers, message?: string): void => {
  const problem = h("div", { "aria-live": "assertive" })
  if (message !== undefined) fill(problem, notice("warn", message))

  // No name attribute: without the script, nothing could ever carry the token into a URL.
  const tokenInput = h("input", {
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "token-hint",
  })
  const submit = button("Sign in", null, { type: "submit", variant: "primary" })
  const form = h(
    "form",
    { class: "stack-form", "aria-label": "Sign in with the admin token" },
    field("Admin token", tokenInput),
    h(
      "p",
      { class: "hint", id: "token-hint" },
      "The token stays in this tab's memory only: reloading or closing the tab signs you out.",
    ),
    submit,
  )
  form.addEventListener("submit", (event) => {
    event.preventDefault()
    const token = tokenInput.value.trim()
    if (token === "") {
      fill(problem, notice("error", "Paste the admin token first."))
      tokenInput.focus()
      return
    }
    submit.disabled = true
    submit.textContent = "Signing in…"
    handlers
      .withAdminToken(token)
      .catch((error: unknown) => {
        fill(problem, notice("error", messageOf(error)))
        tokenInput.select()
      })
      .finally(() => {
        submit.disabled = false
        submit.textContent = "Sign in"
      })
  })

  const oidc = button(
    "Sign in with your identity provider",
    async () => {
      fill(problem)
      try {
        await Oidc.start(client)
      } catch (error) {
        fill(problem, notice("error", `Single sign-on is not available: ${messageOf(error)}`))
      }
    },
    { busyLabel: "Redirecting…" },
  )

  fill(
    root,
    h(
      "main",
      { class: "signin", id: "main" },
      h(
        "section",
        { class: "signin-card", "aria-labelledby": "signin-title" },
        h("div", { class: "brand brand-large" }, h("span", { class: "brand-mark", "aria-hidden": "true" }), "mesh"),
        h("h1", { id: "signin-title" }, "Sign in to the console"),
        problem,
        h("h2", null, "Users"),
        h("p", { class: "muted" }, "Manage your own nodes and tokens."),
        oidc,
        h("div", { class: "divider", role: "separator" }, h("span", null, "or")),
        h("h2", null, "Operators"),
        form,
      ),
    ),
  )
  tokenInput.focus()
}
