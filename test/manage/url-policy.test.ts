import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/errors.js";
import { MAX_UPSTREAM_POOLS, testProvider, UpstreamPools } from "../../src/manage/provider-check.js";
import { checkBaseUrl, isBlockedAddress, listedHosts } from "../../src/manage/url-policy.js";

function reason(raw: string, allowed: string[] = []): string | null {
  try {
    checkBaseUrl(raw, listedHosts(allowed));
    return null;
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    expect(err.code).toBe("unpermitted_base_url");
    return (err.details as { reason: string }).reason;
  }
}

describe("checkBaseUrl", () => {
  it("accepts ordinary https hosts and trusted private hosts, normalised without a trailing slash", () => {
    expect(checkBaseUrl("https://api.openai.com/v1/", new Set()).url).toBe("https://api.openai.com/v1");
    expect(checkBaseUrl("http://10.0.0.7:8000/v1", new Set(["10.0.0.7"])).url).toBe("http://10.0.0.7:8000/v1");
    expect(checkBaseUrl("HTTPS://API.Example.COM", new Set())).toEqual({ url: "https://api.example.com", host: "api.example.com" });
  });

  it("names the reason for each refusal", () => {
    expect(reason("http://127.0.0.1/")).toBe("blocked_address");
    expect(reason("http://[::1]:8000/")).toBe("blocked_address");
    expect(reason("http://[fe80::1]/")).toBe("metadata_address");
    expect(reason("http://169.254.169.254/")).toBe("metadata_address");
    expect(reason("http://[fd00:ec2::254]/")).toBe("metadata_address");
    expect(reason("http://10.0.0.7:8000/v1")).toBe("blocked_address");
    expect(reason("http://LOCALHOST/")).toBe("blocked_address");
    expect(reason("http://a.localhost/")).toBe("blocked_address");
    expect(reason("http://2130706433/")).toBe("ip_form");
    expect(reason("http://0x7f.0.0.1/")).toBe("ip_form");
    // 169.254.169.254 in octal: refused as metadata before its odd form is even looked at.
    expect(reason("http://0251.0376.0251.0376/")).toBe("metadata_address");
    expect(reason("http://u:p@host.example/")).toBe("userinfo");
    expect(reason("http://@host.example/")).toBe("userinfo");
    expect(reason("http://host.example/#x")).toBe("fragment");
    expect(reason("gopher://host.example/")).toBe("scheme");
    expect(reason("http://host.example/ x")).toBe("bad_characters");
    expect(reason("http://host.example\\@evil/")).toBe("bad_characters");
    expect(reason("/relative/path")).toBe("unparseable");
    expect(reason(`https://h.example/${"a".repeat(3000)}`)).toBe("too_long");
  });

  it("lets the operator list loopback hosts, with or without a port", () => {
    expect(reason("http://127.0.0.1:11434/v1", ["127.0.0.1"])).toBeNull();
    expect(reason("http://[::1]:8000/v1", ["[::1]:8000"])).toBeNull();
    expect(reason("http://localhost:8000/v1", ["http://localhost:8000"])).toBeNull();
    // Listing one host does not open another, and listing a metadata address opens nothing.
    expect(reason("http://10.0.0.8/", ["127.0.0.1"])).toBe("blocked_address");
    expect(reason("http://169.254.169.254/", ["169.254.169.254"])).toBe("metadata_address");
  });

  it("treats IPv4-mapped IPv6 forms of blocked addresses as blocked", () => {
    expect(isBlockedAddress("::ffff:127.0.0.1")).toBe(true);
    expect(isBlockedAddress("::ffff:7f00:1")).toBe(true);
    expect(isBlockedAddress("::ffff:a9fe:a9fe")).toBe(true);
    expect(isBlockedAddress("10.1.2.3")).toBe(true);
    expect(isBlockedAddress("93.184.216.34")).toBe(false);
  });
});

describe("connect-time guard and timeout", () => {
  it("refuses to connect to a name that resolves to loopback unless that name is trusted", async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.end("{}");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as AddressInfo).port;
    const untrusted = new UpstreamPools(new Set());
    const blocked = await testProvider(untrusted, { type: "openai_compatible", apiKey: "sk-x-0123456789abcdef", baseUrl: `http://localhost:${port}/v1` });
    expect(blocked.status).toBe("failed");
    expect(blocked.detail).toContain("blocked address");
    expect(JSON.stringify(blocked)).not.toContain("sk-x-0123456789abcdef");
    expect(hits).toBe(0);

    const trusted = new UpstreamPools(new Set(["127.0.0.1"]));
    const ok = await testProvider(trusted, { type: "openai_compatible", apiKey: "", baseUrl: `http://127.0.0.1:${port}/v1` });
    expect(ok.status).toBe("ok");
    expect(hits).toBe(1);
    await untrusted.close();
    await trusted.close();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it("gives up after the timeout with a failed result", async () => {
    const server = createServer(() => {});
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as AddressInfo).port;
    const pools = new UpstreamPools(new Set(["127.0.0.1"]));
    const res = await testProvider(pools, { type: "openai_compatible", apiKey: "k", baseUrl: `http://127.0.0.1:${port}` }, 200);
    expect(res).toMatchObject({ status: "failed", detail: expect.stringContaining("no answer within 200 ms") });
    await pools.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
});

describe("upstream pools", () => {
  it("keeps at most MAX_UPSTREAM_POOLS open", async () => {
    const pools = new UpstreamPools(new Set());
    for (let i = 0; i < MAX_UPSTREAM_POOLS + 5; i++) await pools.get(`http://h${i}.example:80`, `h${i}.example`);
    expect(pools.size).toBe(MAX_UPSTREAM_POOLS);
    await pools.close();
    expect(pools.size).toBe(0);
  });
});
