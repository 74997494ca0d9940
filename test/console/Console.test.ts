/**
 * The operator console end to end: a real chromium against a control plane started here, a real enrollee and a real
 * router speaking the mesh routes, and the dev OIDC issuer for user sign-in. Screenshots of every page land in
 * test-output/console/ (git-ignored) for people to look at.
 */
import { afterAll, beforeAll, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Browser, BrowserContext, Page } from "playwright-core"
import * as PeerKey from "../../src/domain/PeerKey.js"
import { EnrollmentStatus, ServiceType } from "../../src/gen/mesh_pb.js"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as DevOidcIssuer from "../../src/testing/DevOidcIssuer.js"
import * as MeshClient from "../../src/testing/MeshClient.js"
import { admin, setPolicy } from "../support/admin.js"
import { launch, screenshot, type Watched, watch } from "../support/browser.js"
import { describeDatabases } from "../support/databases.js"
import { addressOf, enrollRouter } from "../support/routers.js"

let browser: Browser | undefined

beforeAll(async () => {
  browser = await launch()
})

afterAll(async () => {
  await browser?.close()
})

const run = <A>(effect: Effect.Effect<A>): Promise<A> => Effect.runPromise(effect)

/** A fresh browser context (no storage, no cookies) at the laptop size the screenshots use, closed with the test. */
const newContext = Effect.acquireRelease(
  Effect.promise(() => (browser as Browser).newContext({ viewport: { width: 1280, height: 800 } })),
  (context) => Effect.promise(() => context.close()),
)

/** Opens a page of the console by its tab and waits until it has rendered. */
const go = async (page: Page, id: string) => {
  await page.locator(`nav a[data-page="${id}"]`).click()
  await page.locator(`.page[data-page="${id}"]`).waitFor()
  await page.locator(`.page[data-page="${id}"] [aria-busy="true"]`).waitFor({ state: "detached" })
  await page.locator(`.page[data-page="${id}"] .loading`).waitFor({ state: "detached" })
}

interface AuditPage {
  readonly entries: ReadonlyArray<{ readonly action: string; readonly subject: string }>
}

interface StatusView {
  readonly policy: { readonly version: number; readonly document: unknown }
  readonly nodes: ReadonlyArray<{ readonly peer_id: string; readonly autonomous_recovery: boolean }>
}

const status = async (cp: Harness.ControlPlaneHarness) =>
  (await run(admin(cp, "GET", "/admin/status"))).json as StatusView

/** Nothing but the control plane itself (and, for `allowed`, the issuer's sign-in page), and no script error. */
const expectContained = (watched: Watched, origins: ReadonlyArray<string>) => {
  expect(watched.requests.filter((url) => !origins.includes(new URL(url).origin))).toEqual([])
  expect(watched.errors).toEqual([])
}

const operator = async (cp: Harness.ControlPlaneHarness, context: BrowserContext, folder: string) => {
  const page = await context.newPage()
  const watched = watch(page)
  const shot = (name: string) => screenshot(page, folder, name)

  // The page comes with its policy: our own origin only, no inline code, no framing, no form posts.
  const response = await page.goto(`${cp.url}/console`)
  expect(response?.status()).toBe(200)
  const csp = response?.headers()["content-security-policy"] ?? ""
  for (const directive of [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ]) {
    expect(csp).toContain(directive)
  }
  await page.getByRole("heading", { name: "Sign in to the console" }).waitFor()
  await shot("01-sign-in")

  // A wrong token is refused in words; the right one opens the overview. It is kept in memory only.
  const tokenField = page.getByLabel("Admin token", { exact: true })
  await tokenField.fill("not-the-admin-token")
  await page.getByRole("button", { name: "Sign in", exact: true }).click()
  await page.getByText("This admin token is not accepted by the control plane.").waitFor()
  // By keyboard: Enter in the field signs in.
  await tokenField.fill(cp.adminToken)
  await tokenField.press("Enter")
  await page.getByRole("heading", { name: "Overview" }).waitFor()
  // Evaluated in the page, where storage and cookies live.
  const stored = await page.evaluate<string>(
    "JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie])",
  )
  expect(stored).not.toContain(cp.adminToken)
  expect(page.url()).not.toContain(cp.adminToken)
  expect(await context.cookies()).toEqual([])

  // Policy: a refused one says why next to the editor and the old one stays; then a valid one is saved.
  await go(page, "policy")
  await page.getByText("No policy yet").waitFor()
  const editor = page.getByLabel("Policy JSON")
  const policy = (labels: ReadonlyArray<string>) =>
    JSON.stringify(
      {
        roles: [
          { name: "mesh:role:node", allowedServices: ["*"], allowedLabels: labels },
          { name: "mesh:role:router" },
        ],
        bindings: [{ role: "mesh:role:node", members: ["group:engineering"] }],
      },
      null,
      2,
    )
  await editor.fill(policy(["zone"]))
  await page.getByRole("button", { name: "Review changes" }).click()
  await page.getByRole("heading", { name: "Review the change" }).waitFor()
  expect(await page.locator(".diff-added").count()).toBeGreaterThan(5)
  await page.getByRole("button", { name: "Save policy" }).click()
  const problem = page.locator("#policy-problem")
  await problem.getByText('allowed label "zone" is not *, key=* or key=value').waitFor()
  expect(await problem.textContent()).toContain("The current policy (version 0) is unchanged.")
  expect(await editor.getAttribute("aria-invalid")).toBe("true")
  // The editor selects what the refusal names.
  const selected = await editor.evaluate((element) => {
    const field = element as unknown as { value: string; selectionStart: number; selectionEnd: number }
    return field.value.slice(field.selectionStart, field.selectionEnd)
  })
  expect(selected).toBe("zone")
  expect((await status(cp)).policy.version).toBe(0)
  await shot("05-policy-refused")

  await editor.fill(policy(["zone=*", "tier=*"]))
  await page.getByRole("button", { name: "Review changes" }).click()
  await page.getByRole("button", { name: "Save policy" }).click()
  await page.getByText("Saved. The mesh now runs version 1 of the policy.").waitFor()
  expect((await status(cp)).policy).toMatchObject({
    version: 1,
    document: {
      roles: [{ name: "mesh:role:node", allowedLabels: ["zone=*", "tier=*"] }, { name: "mesh:role:router" }],
    },
  })

  // Tokens: minted, shown once with a copy button, then gone for good.
  await go(page, "tokens")
  await page.getByLabel("Uses").fill("2")
  await page.getByLabel("Description").fill("build agents")
  await page.getByRole("button", { name: "Mint token" }).click()
  const secret = page.locator("[data-secret]")
  await secret.waitFor()
  const token = (await secret.textContent()) ?? ""
  expect(token).toMatch(/^mesh-bt-[0-9a-f]{32}$/)
  await page.getByRole("button", { name: "Copy" }).waitFor()
  await page.locator("tr", { hasText: "build agents" }).getByText("0 / 2").waitFor()
  await page.getByRole("button", { name: "Mint token" }).waitFor()
  await shot("03-tokens-minted")
  await page.getByRole("button", { name: "Done: hide it" }).click()
  await secret.waitFor({ state: "detached" })
  expect(await page.content()).not.toContain(token)
  await go(page, "overview")
  await go(page, "tokens")
  await page.locator("tr", { hasText: "build agents" }).waitFor()
  expect(await page.content()).not.toContain(token)

  // Real enrollees ask with that token and wait for approval.
  const peer = PeerKey.generate()
  const queued = await run(
    Effect.flatMap(MeshClient.enroll(cp.url, peer, token, { labels: { zone: "eu-west" } }), MeshClient.decodeEnroll),
  )
  expect(queued.status).toBe(EnrollmentStatus.PENDING)
  const outsider = PeerKey.generate()
  const outsiderQueued = await run(
    Effect.flatMap(MeshClient.enroll(cp.url, outsider, token, { labels: { tier: "gpu" } }), MeshClient.decodeEnroll),
  )
  expect(outsiderQueued.status).toBe(EnrollmentStatus.PENDING)

  // Meanwhile the policy is narrowed: the change is reviewed as a diff, then saved.
  await go(page, "policy")
  await editor.fill(policy(["zone=*"]))
  await page.getByRole("button", { name: "Review changes" }).click()
  await page.getByText("1 line added, 2 removed, against version 1.").waitFor()
  expect(await page.locator(".diff-removed").allTextContents()).toEqual([
    expect.stringContaining('"zone=*",'),
    expect.stringContaining('"tier=*"'),
  ])
  await shot("05-policy-review")
  await page.getByRole("button", { name: "Save policy" }).click()
  await page.getByText("Saved. The mesh now runs version 2 of the policy.").waitFor()

  // Approvals: labels checked against the role's allowed_labels; approve one; the other was resolved elsewhere.
  await go(page, "approvals")
  const row = page.locator(`tr[data-request="${queued.requestId}"]`)
  const outsiderRow = page.locator(`tr[data-request="${outsiderQueued.requestId}"]`)
  expect(await row.locator(".chip-good").textContent()).toBe("✓ zone=eu-west")
  expect(await outsiderRow.locator(".chip-bad").textContent()).toBe("✗ tier=gpu")
  await outsiderRow.getByText("Approval will be refused: node allows zone=*.").waitFor()
  expect(await page.locator('nav a[data-page="approvals"] .nav-count').textContent()).toBe("2")
  await shot("04-approvals")
  await row.getByRole("button", { name: `Approve ${peer.peerId}` }).click()
  await row.waitFor({ state: "detached" })
  await page.locator("section", { hasText: "Recently resolved" }).getByText("approved").waitFor()
  const admitted = await run(Effect.flatMap(MeshClient.enrollStatus(cp.url, peer), MeshClient.decodeEnroll))
  expect(admitted.status).toBe(EnrollmentStatus.APPROVED)

  await run(admin(cp, "POST", `/admin/enrollments/${outsiderQueued.requestId}/reject`))
  await outsiderRow.getByRole("button", { name: `Reject ${outsider.peerId}` }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Reject" }).click()
  await page.getByText("This request was already rejected by operator.").waitFor()
  await outsiderRow.waitFor({ state: "detached" })

  // The node reports its services; a router holds a lease with telemetry.
  await run(
    MeshClient.reportCatalog(cp.url, peer, admitted.biscuitToken, [
      { type: ServiceType.MCP, name: "files", description: "file tools" },
      { type: ServiceType.INFERENCE, name: "llama-3-8b", description: "local model" },
    ]),
  )
  const router = await run(enrollRouter(cp))
  await run(
    MeshClient.lease(cp.url, router.peer, router.credential, [addressOf(router.peer.peerId)], {
      connectedPeers: [peer.peerId],
      dhtSize: 12,
    }),
  )

  await go(page, "overview")
  await page
    .locator("section", { hasText: "Live routers" })
    .getByText("/ip4/10.0.0.1/tcp/4001", { exact: false })
    .waitFor()
  // Nodes and routers are counted apart, and the router's figures say when they were measured.
  const nodesStat = page.locator(".stat", { has: page.locator(".stat-label", { hasText: /^Nodes$/ }) })
  const nodeCount = (await run(admin(cp, "GET", "/admin/status"))).json as { nodes: Array<{ role: string }> }
  expect(await nodesStat.locator(".stat-value").textContent()).toBe(
    String(nodeCount.nodes.filter((n) => n.role !== "mesh:role:router").length),
  )
  await page.locator(".stat", { hasText: "Live routers" }).getByText("with a live lease · 1 enrolled").waitFor()
  await page.getByText("as each router measured them when it last renewed its lease", { exact: false }).waitFor()
  await page.locator("section", { hasText: "Live routers" }).getByRole("columnheader", { name: "Measured" }).waitFor()
  await shot("02-overview")

  // Nodes: filter by label, ban and unban, autonomous recovery.
  await go(page, "nodes")
  const nodeRow = page.locator(`tr[data-peer="${peer.peerId}"]`)
  await nodeRow.getByText("mcp://files").waitFor()
  await page.getByLabel("Label").fill("zone=eu-west")
  await page.getByText("1 of 2 nodes match").waitFor()
  expect(await page.locator(`tr[data-peer="${router.peer.peerId}"]`).count()).toBe(0)
  await page.getByLabel("Label").fill("")
  await page.getByText("2 nodes", { exact: true }).waitFor()
  await shot("06-nodes")

  // Escape backs out of the confirmation: nothing is banned.
  await nodeRow.getByRole("button", { name: `Ban ${peer.peerId}` }).click()
  await page.getByRole("dialog").waitFor()
  await page.keyboard.press("Escape")
  await page.getByRole("dialog").waitFor({ state: "detached" })
  expect((await run(MeshClient.info(cp.url))).bannedPeerIds).toEqual([])
  await nodeRow.getByRole("button", { name: `Ban ${peer.peerId}` }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Ban node" }).click()
  await nodeRow.locator(".badge", { hasText: "banned" }).waitFor()
  expect((await run(MeshClient.info(cp.url))).bannedPeerIds).toEqual([peer.peerId])
  await page.getByLabel("State").selectOption("banned")
  await page.getByText("1 of 2 nodes match").waitFor()
  await shot("06-nodes-banned")
  await page.getByLabel("State").selectOption("")
  await nodeRow.getByRole("button", { name: `Unban ${peer.peerId}` }).click()
  await nodeRow.locator(".badge", { hasText: "admitted" }).waitFor()
  expect((await run(MeshClient.info(cp.url))).bannedPeerIds).toEqual([])

  await nodeRow.getByRole("switch", { name: `Autonomous recovery for ${peer.peerId}` }).check()
  await page.getByText(/Autonomous recovery on for/).waitFor()
  expect((await status(cp)).nodes.find((n) => n.peer_id === peer.peerId)?.autonomous_recovery).toBe(true)

  // The audit log has every step, and filters by action.
  await go(page, "audit")
  const expected = [
    "node.autonomous_recovery",
    "node.unbanned",
    "node.banned",
    "enrollment.approved",
    "token.minted",
    "enrollment.rejected",
    "enrollment.approved",
    "policy.replaced",
    "token.minted",
    "policy.replaced",
  ]
  await page
    .locator(`tr[data-action]`)
    .nth(expected.length - 1)
    .waitFor()
  const actions = await page
    .locator("tr[data-action]")
    .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-action")))
  expect(actions).toEqual(expected)
  await shot("07-audit")
  await page.getByLabel("Action").selectOption("node.banned")
  await page.locator("tr[data-action]").nth(1).waitFor({ state: "detached" })
  const banned = page.locator("tr[data-action]")
  expect(await banned.count()).toBe(1)
  expect(await banned.getAttribute("data-action")).toBe("node.banned")
  await banned.locator(`code[title="${peer.peerId}"]`).waitFor()
  const api = (await run(admin(cp, "GET", "/admin/audit?action=node.banned"))).json as AuditPage
  expect(api.entries.map((e) => e.subject)).toEqual([peer.peerId])

  // A phone's width.
  await page.setViewportSize({ width: 390, height: 844 })
  await go(page, "nodes")
  await shot("08-nodes-phone")
  await go(page, "overview")
  await shot("09-overview-phone")
  await page.setViewportSize({ width: 1280, height: 800 })

  // Signing out forgets the token: nothing is left to go back to.
  await page.getByRole("button", { name: "Sign out" }).click()
  await page.getByRole("heading", { name: "Sign in to the console" }).waitFor()
  await page.reload()
  await page.getByRole("heading", { name: "Sign in to the console" }).waitFor()

  expectContained(watched, [new URL(cp.url).origin])
}

const user = async (
  cp: Harness.ControlPlaneHarness,
  issuer: DevOidcIssuer.DevOidcIssuer,
  context: BrowserContext,
  folder: string,
) => {
  // Alice and Bob each have a node, enrolled with their ID tokens.
  await run(
    setPolicy(cp, {
      roles: [{ name: "mesh:role:node", allowedServices: ["*"] }],
      bindings: [{ role: "mesh:role:node", members: ["mesh:system:authenticated"] }],
    }),
  )
  const alice = PeerKey.generate()
  const bob = PeerKey.generate()
  for (const [peer, sub] of [
    [alice, "alice"],
    [bob, "bob"],
  ] as const) {
    const idToken = await run(issuer.mint({ sub, email: `${sub}@example.com`, email_verified: true }))
    expect((await run(MeshClient.register(cp.url, peer, idToken))).status).toBe(200)
  }

  const page = await context.newPage()
  const watched = watch(page)
  const shot = (name: string) => screenshot(page, folder, name)
  await page.goto(`${cp.url}/console`)
  await page.getByRole("button", { name: "Sign in with your identity provider" }).click()
  // The issuer's own sign-in page (the development issuer asks which subject to be).
  await page.waitForURL(`${issuer.url}/authorize?**`)
  await page.getByLabel("Subject").fill("alice")
  await page.getByLabel("Email (optional)").fill("alice@example.com")
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { name: "Your mesh" }).waitFor()
  // Back at the console, with the code gone from the address bar and nothing left in storage.
  expect(page.url()).toBe(`${cp.url}/console`)
  expect(await page.evaluate<number>("sessionStorage.length + localStorage.length")).toBe(0)
  await page.locator(".who").getByText("alice@example.com").waitFor()
  await shot("10-user-overview")

  // Alice mints a token of her own (shown once) and a machine of hers enrolls with it.
  await go(page, "tokens")
  expect(await page.getByLabel("Role").isDisabled()).toBe(true)
  await page.getByLabel("Description").fill("alice's laptop")
  await page.getByRole("button", { name: "Mint token" }).click()
  const secret = page.locator("[data-secret]")
  await secret.waitFor()
  const token = (await secret.textContent()) ?? ""
  await page.getByRole("button", { name: "Mint token" }).waitFor()
  await shot("11-user-token")
  const laptop = PeerKey.generate()
  const queued = await run(Effect.flatMap(MeshClient.enroll(cp.url, laptop, token), MeshClient.decodeEnroll))
  await run(admin(cp, "POST", `/admin/enrollments/${queued.requestId}/approve`))

  // She sees and acts on her own nodes only.
  await go(page, "nodes")
  const laptopRow = page.locator(`tr[data-peer="${laptop.peerId}"]`)
  const own = page.locator(`tr[data-peer="${alice.peerId}"]`)
  await own.waitFor()
  await laptopRow.waitFor()
  expect(await page.locator(`tr[data-peer="${bob.peerId}"]`).count()).toBe(0)
  await shot("12-user-nodes")
  await laptopRow.getByRole("button", { name: `Ban ${laptop.peerId}` }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Ban node" }).click()
  await laptopRow.locator(".badge", { hasText: "banned" }).waitFor()
  expect((await run(MeshClient.info(cp.url))).bannedPeerIds).toEqual([laptop.peerId])

  // Banning the node she enrolled with her own sign-in bans her identity too: she is told, and signed out.
  await own.getByRole("button", { name: `Ban ${alice.peerId}` }).click()
  await page.getByRole("dialog").getByText("your identity is banned with it").waitFor()
  await page.getByRole("dialog").getByRole("button", { name: "Ban node" }).click()
  await page.getByRole("heading", { name: "Sign in to the console" }).waitFor()
  await page.getByText("and, with it, your identity").waitFor()
  expect([...(await run(MeshClient.info(cp.url))).bannedPeerIds].sort()).toEqual([laptop.peerId, alice.peerId].sort())

  expectContained(watched, [new URL(cp.url).origin, new URL(issuer.url).origin])
  expect(
    watched.requests
      .filter((url) => new URL(url).origin === new URL(issuer.url).origin)
      .map((u) => new URL(u).pathname),
  ).toEqual(["/authorize", "/authorize"])
}

describeDatabases("the operator console in a browser", (db) => {
  it.scopedLive(
    "an operator signs in with the admin token, saves a policy, mints a token, approves a real enrollee, bans and unbans it, and reads the audit log",
    () =>
      Effect.gen(function* () {
        const issuer = yield* DevOidcIssuer.make()
        const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url] })
        const context = yield* newContext
        yield* Effect.promise(() => operator(cp, context, `operator-${db.driver}`))
      }),
    120_000,
  )

  it.scopedLive(
    "a user signs in through the OIDC issuer (code flow with PKCE) and sees and acts on only their own nodes",
    () =>
      Effect.gen(function* () {
        const issuer = yield* DevOidcIssuer.make()
        const cp = yield* Harness.make({ database: yield* db.fresh, issuers: [issuer.url] })
        const context = yield* newContext
        yield* Effect.promise(() => user(cp, issuer, context, `user-${db.driver}`))
      }),
    120_000,
  )
})
