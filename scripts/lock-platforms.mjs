#!/usr/bin/env node
// The registry this project installs from serves only the linux-x64/arm64 builds of packages that ship one optional
// binary package per platform (biome, buf, rollup, msgpackr-extract). `npm install` then writes a lockfile without
// the other platforms, and `npm ci` refuses it as out of sync. This script adds the missing entries with their
// os/cpu/libc constraints, so `npm ci` skips them on this platform as it would with a complete lockfile.
// Run it after `npm install` changes the lockfile: `node scripts/lock-platforms.mjs`.
import { readFileSync, writeFileSync } from "node:fs"

const lockPath = new URL("../package-lock.json", import.meta.url)
const lock = JSON.parse(readFileSync(lockPath, "utf8"))
const packages = lock.packages

const constraints = (name) => {
  const suffix = name.split("/").pop()
  const parts = suffix.split("-")
  const osNames = ["android", "darwin", "linux", "win32", "freebsd", "openbsd", "openharmony", "sunos", "aix", "netbsd"]
  const os = parts.find((p) => osNames.includes(p))
  const cpuMap = {
    arm64: "arm64",
    x64: "x64",
    ia32: "ia32",
    arm: "arm",
    armv7: "arm",
    loong64: "loong64",
    ppc64: "ppc64",
    riscv64: "riscv64",
    s390x: "s390x",
  }
  const cpu = parts.map((p) => cpuMap[p]).find((c) => c !== undefined)
  const libc =
    os === "linux"
      ? parts.some((p) => p.startsWith("musl"))
        ? "musl"
        : parts.some((p) => p.startsWith("gnu"))
          ? "glibc"
          : undefined
      : undefined
  return { os, cpu, libc }
}

let added = 0
for (const [path, entry] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = path === "" ? "node_modules" : `${path}/node_modules`
    const candidates = [`${base}/${dep}`, `node_modules/${dep}`]
    if (candidates.some((c) => packages[c] !== undefined)) continue
    const { os, cpu, libc } = constraints(dep)
    if (os === undefined || cpu === undefined) continue
    packages[`node_modules/${dep}`] = {
      version,
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(entry.dev ? { dev: true } : {}),
      ...(libc ? { libc: [libc] } : {}),
      optional: true,
      os: [os],
    }
    added++
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))),
)
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`)
process.stdout.write(`added ${added} platform entries\n`)
