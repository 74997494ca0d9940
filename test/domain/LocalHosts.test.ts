import { describe, expect, it } from "@effect/vitest"
import * as LocalHosts from "../../src/domain/LocalHosts.js"

describe("LocalHosts", () => {
  const rules = LocalHosts.rules("192.168.1.5", ["mesh.internal", "[fd00::1]"])

  it("takes loopback names, the bind host and the allowed names, with or without a port, in any case", () => {
    for (const host of [
      "localhost",
      "LOCALHOST:8080",
      "agent.localhost:1",
      "127.0.0.1:8080",
      "127.1.2.3",
      "[::1]:8080",
      "192.168.1.5:8080",
      "mesh.internal",
      "Mesh.Internal.:80",
      "[FD00::1]:8080",
    ]) {
      expect([host, LocalHosts.hostAllowed(rules, host)]).toEqual([host, true])
    }
    expect(LocalHosts.hostAllowed(rules, undefined)).toBe(true)
  })

  it("refuses any other name: a rebinding page's, and lookalikes of loopback", () => {
    for (const host of [
      "evil.example.com",
      "evil.example.com:8080",
      "localhost.evil.example.com",
      "127.0.0.1.evil.example.com",
      "128.0.0.1",
      "0.0.0.0:8080",
      "[::2]",
      "localhost:8080/x",
      "user@localhost",
      "",
    ]) {
      expect([host, LocalHosts.hostAllowed(rules, host)]).toEqual([host, false])
    }
  })

  it("refuses an Origin that is foreign, null or not http(s); takes none, or one of an allowed name", () => {
    expect(LocalHosts.originAllowed(rules, undefined)).toBe(true)
    for (const origin of [
      "http://localhost:3000",
      "https://127.0.0.1",
      "http://mesh.internal:8080",
      "http://[::1]:1",
    ]) {
      expect([origin, LocalHosts.originAllowed(rules, origin)]).toEqual([origin, true])
    }
    for (const origin of ["http://evil.example.com", "null", "file://", "chrome-extension://abc", "http://0.0.0.0"]) {
      expect([origin, LocalHosts.originAllowed(rules, origin)]).toEqual([origin, false])
    }
  })

  it("`*` takes any name; the flag holds names without port or scheme", () => {
    const any = LocalHosts.rules(undefined, ["*"])
    expect(LocalHosts.hostAllowed(any, "evil.example.com")).toBe(true)
    expect(LocalHosts.originAllowed(any, "http://evil.example.com")).toBe(true)
    for (const name of ["*", "mesh.internal", "10.0.0.1", "[fd00::1]"]) expect(LocalHosts.isHostName(name)).toBe(true)
    for (const name of ["mesh.internal:80", "http://mesh.internal", "fd00::1", "a b", "*.example.com"]) {
      expect([name, LocalHosts.isHostName(name)]).toEqual([name, false])
    }
  })
})
