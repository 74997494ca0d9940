// Set-up steps of the example mesh in compose.yaml, run as one-shot services of the mesh image. Each step keeps what
// an earlier run made, so `docker compose up` can run again over the same volumes.
//
//   node init.mjs secrets   (as root, before postgres) makes the admin token, the postgres password and the
//                           control plane's DSN, and hands the token folder to the mesh user.
//   node init.mjs mesh      (as the mesh user, once the control plane is healthy) replaces the policy and mints one
//                           single-use bootstrap token per router and node, each in a file of its own.
//
// Settings come from the environment (MESH_INIT_*); secrets only ever travel in files (0600, the postgres password
// 0644 in a volume that only postgres and this step mount, since the postgres image reads it as its own user).
import { randomBytes } from "node:crypto"
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parse } from "yaml"

const env = (name, fallback) => {
  const value = process.env[name]?.trim()
  if (value !== undefined && value.length > 0) return value
  if (fallback !== undefined) return fallback
  throw new Error(`${name} is not set`)
}

const say = (line) => process.stdout.write(`mesh-init: ${line}\n`)

/** Writes a file whole (a temporary file renamed over it), with its mode and owner set before it appears. */
const writeSecret = (path, content, { mode = 0o600, owner } = {}) => {
  const temporary = `${path}.tmp-${process.pid}`
  writeFileSync(temporary, `${content}\n`, { mode })
  chmodSync(temporary, mode)
  if (owner !== undefined) chownSync(temporary, owner.uid, owner.gid)
  renameSync(temporary, path)
}

const secrets = () => {
  const secretsDir = env("MESH_INIT_SECRETS_DIR", "/run/mesh/secrets")
  const postgresDir = env("MESH_INIT_POSTGRES_DIR", "/run/mesh/postgres")
  const tokensDir = env("MESH_INIT_TOKENS_DIR", "/run/mesh/tokens")
  const owner = { uid: Number(env("MESH_INIT_UID", "1000")), gid: Number(env("MESH_INIT_GID", "1000")) }
  const dbHost = env("MESH_INIT_DB_HOST", "postgres:5432")
  const dbUser = env("MESH_INIT_DB_USER", "mesh")
  const dbName = env("MESH_INIT_DB_NAME", "mesh")
  for (const dir of [secretsDir, postgresDir, tokensDir]) mkdirSync(dir, { recursive: true })

  const adminToken = join(secretsDir, "admin-token")
  if (existsSync(adminToken)) say(`keeping ${adminToken}`)
  else {
    writeSecret(adminToken, `mesh-admin-${randomBytes(32).toString("hex")}`, { owner })
    say(`wrote ${adminToken}`)
  }

  const password = join(postgresDir, "password")
  if (existsSync(password)) say(`keeping ${password}`)
  else {
    writeSecret(password, randomBytes(24).toString("hex"), { mode: 0o644 })
    say(`wrote ${password}`)
  }

  const dsn = join(secretsDir, "db-dsn")
  if (existsSync(dsn)) say(`keeping ${dsn}`)
  else {
    const secret = readFileSync(password, "utf8").trim()
    const url = `postgres://${encodeURIComponent(dbUser)}:${encodeURIComponent(secret)}@${dbHost}/${dbName}`
    writeSecret(dsn, url, { owner })
    say(`wrote ${dsn}`)
  }

  // The mesh step runs as the mesh user and writes the bootstrap tokens here. Mode before owner, and only while the
  // folder is still ours: this step holds CHOWN only, and without FOWNER root cannot change what it gave away.
  const { uid } = statSync(tokensDir)
  if (uid === process.getuid?.()) chmodSync(tokensDir, 0o700)
  if (uid !== owner.uid) chownSync(tokensDir, owner.uid, owner.gid)
}

const call = async (url, adminToken, init) => {
  const response = await fetch(url, {
    ...init,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
  })
  const body = await response.text()
  if (!response.ok) throw new Error(`${init.method} ${new URL(url).pathname}: ${response.status} ${body}`)
  return JSON.parse(body)
}

const waitReady = async (controlPlane) => {
  for (let attempt = 0; attempt < 60; attempt++) {
    const ready = await fetch(`${controlPlane}/readyz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ready) return
    await new Promise((resolve) => setTimeout(resolve, 1_000))
  }
  throw new Error(`${controlPlane} is not ready after 60 s`)
}

const mesh = async () => {
  const controlPlane = env("MESH_INIT_CONTROL_PLANE", "http://control-plane:8080").replace(/\/$/, "")
  const adminToken = readFileSync(env("MESH_INIT_ADMIN_TOKEN_PATH", "/run/mesh/secrets/admin-token"), "utf8").trim()
  const tokensDir = env("MESH_INIT_TOKENS_DIR", "/run/mesh/tokens")
  // name=role pairs: each gets a bootstrap token in <tokens dir>/<name>.
  const wanted = env("MESH_INIT_TOKENS", "router=mesh:role:router,node-a=mesh:role:node,node-b=mesh:role:node")
  const policy = process.env.MESH_INIT_POLICY_PATH?.trim()

  await waitReady(controlPlane)
  if (policy !== undefined && policy.length > 0) {
    const document = parse(readFileSync(policy, "utf8"))
    await call(`${controlPlane}/policies`, adminToken, { method: "PUT", body: JSON.stringify(document) })
    say(`policy from ${policy} applied`)
  }
  for (const pair of wanted.split(",").map((p) => p.trim())) {
    const [name, role] = pair.split("=")
    if (name === undefined || role === undefined || !/^[a-z0-9-]+$/.test(name)) {
      throw new Error(`MESH_INIT_TOKENS: "${pair}" is not name=role`)
    }
    const file = join(tokensDir, name)
    if (existsSync(file)) {
      say(`keeping ${file}`)
      continue
    }
    const minted = await call(`${controlPlane}/admin/bootstrap-tokens`, adminToken, {
      method: "POST",
      body: JSON.stringify({ role, ttl_hours: 24, max_usages: 1, description: `compose: ${name}` }),
    })
    writeSecret(file, minted.token)
    say(`wrote ${file} (${role}, single use, 24 h)`)
  }
}

const step = process.argv[2]
try {
  if (step === "secrets") secrets()
  else if (step === "mesh") await mesh()
  else {
    process.stderr.write("usage: init.mjs secrets|mesh\n")
    process.exit(2)
  }
} catch (error) {
  process.stderr.write(`mesh-init: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
}
