import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as AgentCard from "../../src/domain/AgentCard.js"
import * as Forwarding from "../../src/domain/Forwarding.js"
import * as Labels from "../../src/domain/Labels.js"

describe("Forwarding.checkPath", () => {
  it("refuses '..' segments written plainly or percent-encoded, at any depth of encoding", () => {
    for (const path of [
      "/mesh/p/mcp/x/../y",
      "/..",
      "/a/..",
      "/a/%2e%2e/b",
      "/a/%2E%2E",
      "/a/.%2e/b",
      "/a/%2e./b",
      "/a/..%2fb",
      "/a/%2e%2e%2Fb",
      "/a/..%5cb",
      "/a/%252e%252e/b",
      "/a\\..\\b",
    ]) {
      expect([path, Either.isLeft(Forwarding.checkPath(path))]).toEqual([path, true])
    }
  })

  it("refuses what a servlet container or a C server reads as '..': ';', NUL and NFKC dots, encoded or not", () => {
    // Issue 29, item 5: each of these reached a backend behind a grant on `a2a://agent/public`.
    for (const path of [
      "/public/..;/admin",
      "/public/..%3b/admin",
      "/public/..%3B/admin",
      "/public/.;/admin",
      "/public/%2e%2e;/admin",
      "/public/..%00/admin",
      "/public/..%2500/admin",
      "/public/x\u0000",
      "/public/%EF%BC%8E%EF%BC%8E/admin",
      "/public/\uFF0E\uFF0E/admin",
      "/public/\u2025/admin",
      "/public/..\uFF0Fadmin",
      "/public/.../admin",
      "/public/..b",
      "/public;x/a",
    ]) {
      expect([path, Either.isLeft(Forwarding.checkPath(path))]).toEqual([path, true])
      expect([path, Either.isLeft(Forwarding.canonicalPath(path))]).toEqual([path, true])
    }
  })

  it("accepts dots that do not begin a segment, and refuses what does not decode", () => {
    for (const path of ["/a/b..", "/a/./b", "/a/.b", "/v1/models", "/a/%20b", "", "/"]) {
      expect([path, Forwarding.checkPath(path)]).toEqual([path, Either.void])
    }
    expect(Forwarding.checkPath("/a/%zz")).toEqual(Either.left("path is not valid percent-encoding"))
  })
})

describe("Forwarding.canonicalPath", () => {
  it("decodes unreserved characters, writes escapes in capitals and drops '.' segments; the rest stays as it came", () => {
    for (const [raw, canonical] of [
      ["", ""],
      ["/", "/"],
      ["/%70ublic/x", "/public/x"],
      ["/public/%2e/x", "/public/x"],
      ["/./public/./x/.", "/public/x/"],
      ["/a%2fb/%c3%a9", "/a%2Fb/%C3%A9"],
      ["/a%20b//c", "/a%20b//c"],
      ["/v1/chat/completions", "/v1/chat/completions"],
    ] as const) {
      expect([raw, Forwarding.canonicalPath(raw)]).toEqual([raw, Either.right(canonical)])
    }
  })
})

describe("Forwarding.checkService", () => {
  it("knows the three types and the name rule of the configuration file", () => {
    expect(Forwarding.checkService("mcp", "weather.v2")).toEqual(Either.right("mcp"))
    expect(Either.isLeft(Forwarding.checkService("ftp", "x"))).toBe(true)
    expect(Either.isLeft(Forwarding.checkService("mcp", "-x"))).toBe(true)
    expect(Either.isLeft(Forwarding.checkService("mcp", "a%2Fb"))).toBe(true)
  })
})

describe("Forwarding headers", () => {
  const caller = { peerId: "12D3Caller", role: "mesh:role:node", labels: { zone: "eu", a: "1" } }
  const origin = { host: "127.0.0.1:8080", proto: "http" as const, prefix: "/mesh/12D3B/mcp/x" }

  it("drop hop-by-hop headers and those Connection names", () => {
    const out = Forwarding.endToEnd({
      connection: "keep-alive, X-Private",
      "x-private": "1",
      "keep-alive": "timeout=5",
      "transfer-encoding": "chunked",
      upgrade: "websocket",
      te: "trailers",
      expect: "100-continue",
      "proxy-authorization": "Basic x",
      "content-type": "application/json",
      "set-cookie": ["a=1", "b=2"],
    })
    expect(out).toEqual({ "content-type": "application/json", "set-cookie": ["a=1", "b=2"] })
  })

  it("to the peer: Authorization and MCP headers pass; labels, token, cookies and node-set headers do not", () => {
    const out = Forwarding.toPeer(
      {
        authorization: "Bearer service",
        "mcp-session-id": "s",
        "mcp-protocol-version": "2025-06-18",
        accept: "application/json, text/event-stream",
        "last-event-id": "7",
        "x-mesh-required-labels": "zone=eu",
        "x-mesh-authentication": "Bearer api",
        "x-mesh-agent": "agent-1",
        cookie: "c=1",
        "x-forwarded-for": "6.6.6.6",
        "x-mesh-peer-id": "forged",
        host: "127.0.0.1:8080",
      },
      origin,
    )
    expect(out).toEqual({
      authorization: "Bearer service",
      "mcp-session-id": "s",
      "mcp-protocol-version": "2025-06-18",
      accept: "application/json, text/event-stream",
      "last-event-id": "7",
      host: "127.0.0.1:8080",
      "x-forwarded-host": "127.0.0.1:8080",
      "x-forwarded-proto": "http",
      "x-forwarded-prefix": "/mesh/12D3B/mcp/x",
    })
  })

  it("to the backend: Host is the backend's, the verified caller replaces anything the request claimed", () => {
    const out = Forwarding.toBackend(
      {
        host: "127.0.0.1:8080",
        "x-forwarded-host": "127.0.0.1:8080",
        "x-forwarded-proto": "https",
        "x-forwarded-prefix": "/mesh/12D3B/mcp/x",
        "x-forwarded-for": "6.6.6.6",
        forwarded: "for=6.6.6.6",
        "x-mesh-peer-id": "forged",
        "x-mesh-peer-role": "mesh:role:admin",
        authorization: "Bearer service",
      },
      caller,
      "localhost:3000",
    )
    expect(out).toEqual({
      host: "localhost:3000",
      authorization: "Bearer service",
      "x-forwarded-for": "12D3Caller",
      "x-forwarded-host": "127.0.0.1:8080",
      "x-forwarded-proto": "https",
      "x-forwarded-prefix": "/mesh/12D3B/mcp/x",
      "x-mesh-peer-id": "12D3Caller",
      "x-mesh-peer-role": "mesh:role:node",
      "x-mesh-peer-labels": "a=1,zone=eu",
    })
  })

  // What a caller could write to pass for a front end, a TLS terminator or the node itself (issue 29, item 6).
  const forged = {
    "x-mesh-agent": "agent-1",
    "x-mesh-peer-id": "forged",
    "x-mesh-anything": "1",
    "x-original-url": "/admin",
    "x-rewrite-url": "/admin",
    "x-real-ip": "127.0.0.1",
    "x-client-ip": "127.0.0.1",
    "true-client-ip": "127.0.0.1",
    "x-client-cert": "MIIB",
    "x-ssl-client-dn": "CN=admin",
    "x-ssl-client-verify": "SUCCESS",
    "x-http-method-override": "DELETE",
    "x-method-override": "DELETE",
    "x-forwarded-port": "443",
    "x-forwarded-server": "front",
    "x-forwarded-client-cert": "Hash=1",
    forwarded: "for=127.0.0.1",
  }

  it("no hop passes on a header only a node may set, whatever case the caller wrote it in", () => {
    const shouted = Object.fromEntries(Object.entries(forged).map(([k, v]) => [k.toUpperCase(), v]))
    for (const headers of [forged, shouted]) {
      expect(Forwarding.toPeer({ ...headers, accept: "*/*" }, undefined)).toEqual({ accept: "*/*" })
      expect(Forwarding.toBackend({ ...headers, accept: "*/*" }, caller, "b:1")).toEqual({
        accept: "*/*",
        host: "b:1",
        "x-forwarded-for": "12D3Caller",
        "x-forwarded-proto": "http",
        "x-mesh-peer-id": "12D3Caller",
        "x-mesh-peer-role": "mesh:role:node",
        "x-mesh-peer-labels": "a=1,zone=eu",
      })
    }
    expect(Object.keys(forged).every(Forwarding.nodeOnly)).toBe(true)
    for (const name of ["authorization", "mcp-session-id", "x-request-id", "x-stainless-lang", "x-api-key"]) {
      expect([name, Forwarding.nodeOnly(name)]).toEqual([name, false])
    }
  })

  it("a response loses any X-Mesh-* its backend wrote: only the answering node sets them", () => {
    expect(
      Forwarding.response({ "x-mesh-provider": "forged", "x-mesh-overhead-ms": "0", "content-type": "text/plain" }),
    ).toEqual({ "content-type": "text/plain" })
  })

  it("an origin is taken only whole and printable", () => {
    expect(Forwarding.originOf({ "x-forwarded-host": "h", "x-forwarded-prefix": "/p" })).toEqual({
      host: "h",
      proto: "http",
      prefix: "/p",
    })
    expect(Forwarding.originOf({ "x-forwarded-host": "h" })).toBeUndefined()
    expect(Forwarding.originOf({ "x-forwarded-host": "a b", "x-forwarded-prefix": "/p" })).toBeUndefined()
    expect(Forwarding.originOf({ "x-forwarded-host": "h", "x-forwarded-prefix": "p" })).toBeUndefined()
  })
})

describe("Forwarding.backendPath", () => {
  const path = (url: string, rawPath: string, rawQuery: string) =>
    Forwarding.backendPath(Forwarding.target(url), rawPath, rawQuery)

  it("appends the raw path below the service to the target's path, and the raw query, as they came", () => {
    expect(path("http://h:1/mcp", "", "")).toBe("/mcp")
    expect(path("http://h:1/mcp", "/", "")).toBe("/mcp/")
    expect(path("http://h:1/", "/v1/models", "")).toBe("/v1/models")
    expect(path("http://h:1", "", "")).toBe("/")
    expect(path("http://h:1/a/", "/b%20c", "x=1&y=%20")).toBe("/a/b%20c?x=1&y=%20")
    expect(path("http://h:1/a?key=k", "/b", "x=1")).toBe("/a/b?key=k&x=1")
    expect(path("http://h:1/a?key=k", "", "")).toBe("/a?key=k")
  })

  it("parses the target once: host for the Host header, hostname and port for the connection", () => {
    expect(Forwarding.target("https://[::1]:8443/x")).toEqual({
      protocol: "https:",
      hostname: "::1",
      port: "8443",
      host: "[::1]:8443",
      path: "/x",
      query: "",
    })
  })
})

describe("Labels for egress", () => {
  it("a requirement is met by one attested pair; a floor needs every pair", () => {
    const attested = { zone: "eu", tier: "gold" }
    expect(Labels.attestsAny(attested, { zone: "us", tier: "gold" })).toBe(true)
    expect(Labels.attestsAny(attested, { zone: "us" })).toBe(false)
    expect(Labels.attestsAny(attested, { constructor: "x" })).toBe(false)
    expect(Labels.missing(attested, { zone: "eu", tier: "silver", region: "x" })).toEqual(["region=x", "tier=silver"])
    expect(Labels.missing(attested, {})).toEqual([])
  })
})

describe("AgentCard.rewrite", () => {
  const target = "http://127.0.0.1:9999/a2a"
  const base = "http://127.0.0.1:8080/mesh/12D3B/a2a/agent"

  it("points interface URLs at the proxy path, keeping the part below target_url", () => {
    expect(AgentCard.rewriteUrl("http://localhost:9999/a2a/rpc?v=1", target, base)).toBe(`${base}/rpc?v=1`)
    expect(AgentCard.rewriteUrl("http://127.0.0.1:9999/a2a/", target, base)).toBe(base)
    expect(AgentCard.rewriteUrl("http://elsewhere/x", target, base)).toBe(base)
    expect(AgentCard.rewriteUrl("not a url", target, base)).toBe(base)
  })

  it("rewrites url, additionalInterfaces and supportedInterfaces, and nothing else", () => {
    const card = {
      name: "n",
      url: "http://127.0.0.1:9999/a2a",
      additionalInterfaces: [{ url: "http://127.0.0.1:9999/a2a/rest", transport: "HTTP+JSON" }, "odd"],
      supportedInterfaces: [{ url: "http://127.0.0.1:9999/a2a/rpc", protocolBinding: "JSONRPC" }],
      provider: { url: "https://example.com" },
    }
    expect(AgentCard.rewrite(card, target, base)).toEqual({
      name: "n",
      url: base,
      additionalInterfaces: [{ url: `${base}/rest`, transport: "HTTP+JSON" }, "odd"],
      supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: "JSONRPC" }],
      provider: { url: "https://example.com" },
    })
    expect(AgentCard.rewrite([1], target, base)).toEqual([1])
  })
})
