import { type LookupAddress, lookup as dnsLookup } from "node:dns";
import { BlockList, isIP } from "node:net";
import { DomainError } from "../errors.js";
import { hasSpaceOrControl } from "./common.js";

/**
 * The base_url rules (SSRF defence, security.md). A provider key is sent to base_url by the
 * connectivity test and the gateway, so base_url must not point at this host, the internal network,
 * the cloud metadata service or another address reached by trickery. Hosts the operator trusts are
 * permitted as written: those listed in serve.provider_base_url_hosts and those a provider in
 * voxgate.yaml already uses (that is how a local vLLM on 127.0.0.1 or 10.0.0.7 is allowed).
 * Cloud metadata addresses are refused whatever the configuration says.
 */
export const BASE_URL_HOSTS_KEY = "serve.provider_base_url_hosts";
export const MAX_BASE_URL_LENGTH = 2048;

/** Never a provider, whatever is configured: link-local (where cloud metadata services answer) and known metadata IPs. */
const METADATA = new BlockList();
METADATA.addSubnet("169.254.0.0", 16, "ipv4"); // link-local, incl. 169.254.169.254 and ECS 169.254.170.2
METADATA.addAddress("100.100.100.200", "ipv4"); // Alibaba Cloud metadata
METADATA.addSubnet("fe80::", 10, "ipv6"); // link-local
METADATA.addSubnet("fd00:ec2::", 32, "ipv6"); // AWS IMDS and friends over IPv6 (fd00:ec2::254)

/** Not a public address: this host, loopback, private, CGNAT, benchmarking, multicast, reserved. */
const INTERNAL = new BlockList();
INTERNAL.addSubnet("0.0.0.0", 8, "ipv4"); // "this host"
INTERNAL.addSubnet("10.0.0.0", 8, "ipv4"); // private
INTERNAL.addSubnet("100.64.0.0", 10, "ipv4"); // carrier-grade NAT
INTERNAL.addSubnet("127.0.0.0", 8, "ipv4"); // loopback
INTERNAL.addSubnet("172.16.0.0", 12, "ipv4"); // private
INTERNAL.addSubnet("192.0.0.0", 24, "ipv4"); // IETF protocol assignments
INTERNAL.addSubnet("192.168.0.0", 16, "ipv4"); // private
INTERNAL.addSubnet("198.18.0.0", 15, "ipv4"); // benchmarking
INTERNAL.addSubnet("224.0.0.0", 3, "ipv4"); // multicast, reserved, broadcast
INTERNAL.addAddress("::", "ipv6");
INTERNAL.addAddress("::1", "ipv6");
INTERNAL.addSubnet("100::", 64, "ipv6"); // discard
INTERNAL.addSubnet("2001::", 32, "ipv6"); // Teredo: an IPv4 address hidden (XOR-ed) inside
INTERNAL.addSubnet("64:ff9b:1::", 48, "ipv6"); // local-use NAT64
INTERNAL.addSubnet("fc00::", 7, "ipv6"); // unique local
INTERNAL.addSubnet("ff00::", 8, "ipv6"); // multicast

const METADATA_NAMES = new Set(["metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"]);
const LOCAL_NAMES = new Set(["localhost"]);

function refuse(reason: string, message: string): never {
  throw new DomainError("unpermitted_base_url", `${message}; to allow it, list the host in ${BASE_URL_HOSTS_KEY}`, {
    reason,
    config_key: BASE_URL_HOSTS_KEY,
  });
}

/** Host as the URL parser normalises it, without IPv6 brackets, lower case. */
export function bareHost(hostname: string): string {
  // "localhost." is localhost: a trailing root dot must not slip past a name check.
  return hostname.replace(/^\[|\]$/g, "").replace(/\.+$/, "").toLowerCase();
}

/** Normalised host names from the config list; entries may carry a port or brackets. */
export function listedHosts(configured: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const entry of configured) {
    const e = entry.trim();
    if (!e) continue;
    try {
      out.add(bareHost(new URL(e.includes("://") ? e : `http://${e}`).hostname));
    } catch {
      out.add(bareHost(e));
    }
  }
  return out;
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad allowed), or null. */
function ipv6Groups(ip: string): number[] | null {
  let text = ip;
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const head = parse(halves[0] ?? "");
  const tail = halves.length === 2 ? parse(halves[1] ?? "") : [];
  const fill = 8 - head.length - tail.length;
  if (fill < 0 || (halves.length === 1 && fill !== 0)) return null;
  const groups = [...head, ...new Array<number>(fill).fill(0), ...tail];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address carries, for the forms that reach it: IPv4-mapped (::ffff:a.b.c.d),
 * IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and
 * 6to4 (2002:aabb:ccdd::). Null for any other address.
 */
export function embeddedIpv4(ip: string): string | null {
  const g = ipv6Groups(ip);
  if (!g) return null;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroTo(5) && g5 === 0xffff) return v4(g6, g7);
  if (zeroTo(4) && g4 === 0xffff && g5 === 0) return v4(g6, g7);
  if (zeroTo(6) && (g6 !== 0 || g7 > 1)) return v4(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return v4(g6, g7);
  if (g0 === 0x2002) return v4(g1, g2);
  return null;
}

/** metadata: never permitted; internal: permitted only on a host the operator trusts; null: public. */
export function addressClass(ip: string): "metadata" | "internal" | null {
  const family = isIP(ip);
  if (family === 0) return null;
  if (family === 6) {
    const inner = embeddedIpv4(ip);
    if (inner !== null) return addressClass(inner) ?? (INTERNAL.check(ip, "ipv6") ? "internal" : null);
  }
  const type = family === 4 ? "ipv4" : "ipv6";
  if (METADATA.check(ip, type)) return "metadata";
  return INTERNAL.check(ip, type) ? "internal" : null;
}

/** True for every address a key must not be sent to unless the operator trusts the host. */
export function isBlockedAddress(ip: string): boolean {
  return addressClass(ip) !== null;
}

/** True for cloud metadata addresses: refused even on trusted hosts and at connect time. */
export function isMetadataAddress(ip: string): boolean {
  return addressClass(ip) === "metadata";
}

function rawAuthority(raw: string): string {
  return raw.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "").split(/[/?#]/, 1)[0] ?? "";
}

/** The authority's host exactly as the caller typed it (before the URL parser canonicalises it). */
function rawHost(raw: string): string {
  const authority = rawAuthority(raw);
  const host = authority.slice(authority.lastIndexOf("@") + 1);
  if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1);
  return host.replace(/:\d*$/, "");
}

/**
 * Parses and checks a base_url; returns its normalised form (no trailing slash). `trusted` is the
 * set of hosts the operator trusts (trustedUpstreamHosts). Throws 400 unpermitted_base_url for
 * anything a key must not be sent to.
 */
export function checkBaseUrl(raw: string, trusted: ReadonlySet<string>): { url: string; host: string } {
  if (raw.length > MAX_BASE_URL_LENGTH) refuse("too_long", `base_url is longer than ${MAX_BASE_URL_LENGTH} characters`);
  // Backslashes, whitespace and control characters are where parsers disagree about the host.
  if (hasSpaceOrControl(raw) || raw.includes("\\")) refuse("bad_characters", "base_url contains whitespace, a backslash or a control character");
  if (raw.includes("#")) refuse("fragment", "base_url must not contain a # fragment");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("unparseable", "base_url is not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") refuse("scheme", `base_url scheme ${url.protocol} is not http or https`);
  if (url.username || url.password || rawAuthority(raw).includes("@")) {
    refuse("userinfo", "base_url must not carry user@ credentials");
  }
  if (url.search) refuse("query", "base_url must not carry a query string");
  const host = bareHost(url.hostname);
  if (!host) refuse("no_host", "base_url has no host");
  if (isMetadataAddress(host) || METADATA_NAMES.has(host)) {
    throw new DomainError(
      "unpermitted_base_url",
      `base_url host ${host} is a cloud metadata or link-local address: never permitted, not even when listed in ${BASE_URL_HOSTS_KEY}`,
      { reason: "metadata_address", config_key: BASE_URL_HOSTS_KEY },
    );
  }
  const typed = bareHost(rawHost(raw));
  if (trusted.has(host) || trusted.has(typed)) return { url: normalise(url), host };

  // 2130706433, 0x7f.1, 0177.0.0.1, 127.1: the parser turns them into 127.0.0.1; the obfuscation is the tell.
  if (isIP(host) === 4 && typed !== host) refuse("ip_form", `base_url host ${typed} is a non-canonical IP address form`);
  if (isBlockedAddress(host)) refuse("blocked_address", `base_url host ${host} is a loopback, private, internal or reserved address`);
  if (LOCAL_NAMES.has(host) || host.endsWith(".localhost")) refuse("blocked_address", `base_url host ${host} names this machine`);
  return { url: normalise(url), host };
}

function normalise(url: URL): string {
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * Hosts the operator trusts as provider base_url hosts (on create, update, test and at connect
 * time): those listed in serve.provider_base_url_hosts, and those of providers the operator wrote
 * into voxgate.yaml (e.g. Ollama on localhost, vLLM on 10.0.0.7). Metadata addresses never count.
 */
export function trustedUpstreamHosts(config: {
  serve: { provider_base_url_hosts: readonly string[] };
  providers: Record<string, { base_url?: string | null }>;
}): Set<string> {
  const hosts = listedHosts(config.serve.provider_base_url_hosts);
  for (const p of Object.values(config.providers)) {
    if (!p.base_url) continue;
    try {
      hosts.add(bareHost(new URL(p.base_url).hostname));
    } catch {
      // An unparseable yaml base_url simply fails its test later.
    }
  }
  for (const h of hosts) if (isMetadataAddress(h) || METADATA_NAMES.has(h)) hosts.delete(h);
  return hosts;
}

/** scheme://host[:port] of a URL: what a stored provider key was entered for. */
export function originOf(url: string): string {
  return new URL(url).origin;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
/** A `lookup` for net/http/undici/ws connect options. */
export type ConnectLookup = (hostname: string, options: object, callback: LookupCallback) => void;

/**
 * The connect-time address check of every outbound connection that carries a provider key (gateway
 * HTTP pools, WebSocket relays, provider tests): the name is resolved and the connection refused
 * (EBLOCKEDADDRESS) when an address is a metadata address (always, even for a trusted name re-pointed
 * by DNS) or internal while the host is not trusted (a yaml provider's or serve.provider_base_url_hosts).
 * A check of the URL at write time cannot see DNS rebinding; this one runs on every new connection.
 */
export function guardedLookup(trusted: boolean): ConnectLookup {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options }, (err, address, family) => {
      if (err) return callback(err, address as string, family);
      const list = Array.isArray(address) ? address : [{ address, family }];
      if (list.some((a) => isMetadataAddress(a.address)) || (!trusted && list.some((a) => isBlockedAddress(a.address)))) {
        const e: NodeJS.ErrnoException = new Error(`${hostname} resolves to a blocked address`);
        e.code = "EBLOCKEDADDRESS";
        return callback(e, address as string, family);
      }
      callback(null, address as string, family);
    });
  };
}
