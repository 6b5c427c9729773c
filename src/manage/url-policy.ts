import { BlockList, isIP } from "node:net";
import { ApiError } from "../http/errors.js";
import { hasSpaceOrControl } from "./common.js";

/**
 * The base_url rules (SSRF defence, security.md). A provider key is sent to base_url by the
 * connectivity test and the gateway, so base_url must not point at this host, the cloud metadata
 * service or another address reached by trickery. Hosts listed in serve.provider_base_url_hosts
 * are trusted as written (that is how an operator allows a local vLLM on 127.0.0.1).
 */
export const BASE_URL_HOSTS_KEY = "serve.provider_base_url_hosts";
export const MAX_BASE_URL_LENGTH = 2048;

const BLOCKED = new BlockList();
BLOCKED.addSubnet("0.0.0.0", 8, "ipv4"); // "this host"
BLOCKED.addSubnet("127.0.0.0", 8, "ipv4"); // loopback
BLOCKED.addSubnet("169.254.0.0", 16, "ipv4"); // link-local, incl. 169.254.169.254 metadata
BLOCKED.addAddress("100.100.100.200", "ipv4"); // Alibaba Cloud metadata
BLOCKED.addAddress("::", "ipv6");
BLOCKED.addAddress("::1", "ipv6");
BLOCKED.addSubnet("fe80::", 10, "ipv6"); // link-local
BLOCKED.addAddress("fd00:ec2::254", "ipv6"); // AWS IMDS over IPv6

const BLOCKED_NAMES = new Set(["localhost", "metadata", "metadata.google.internal", "instance-data"]);

function refuse(reason: string, message: string): never {
  throw new ApiError("unpermitted_base_url", `${message}; to allow it, list the host in ${BASE_URL_HOSTS_KEY}`, {
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

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:127.0.0.1 → 127.0.0.1). */
function unmapped(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m?.[1]) return m[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (hex?.[1] && hex[2]) {
    const hi = Number.parseInt(hex[1], 16);
    const lo = Number.parseInt(hex[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return ip;
}

/** True for loopback, link-local, metadata and "this host" addresses. */
export function isBlockedAddress(ip: string): boolean {
  const a = unmapped(ip);
  const family = isIP(a);
  if (family === 0) return false;
  return BLOCKED.check(a, family === 4 ? "ipv4" : "ipv6");
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
 * Parses and checks a base_url; returns its normalised form (no trailing slash).
 * Throws 400 unpermitted_base_url for anything a key must not be sent to.
 */
export function checkBaseUrl(raw: string, allowed: ReadonlySet<string>): { url: string; host: string } {
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
  const typed = bareHost(rawHost(raw));
  if (allowed.has(host) || allowed.has(typed)) return { url: normalise(url), host };

  // 2130706433, 0x7f.1, 0177.0.0.1, 127.1: the parser turns them into 127.0.0.1; the obfuscation is the tell.
  if (isIP(host) === 4 && typed !== host) refuse("ip_form", `base_url host ${typed} is a non-canonical IP address form`);
  if (isBlockedAddress(host)) refuse("blocked_address", `base_url host ${host} is a loopback, link-local or metadata address`);
  if (BLOCKED_NAMES.has(host) || host.endsWith(".localhost")) refuse("blocked_address", `base_url host ${host} names this machine or a metadata service`);
  return { url: normalise(url), host };
}

function normalise(url: URL): string {
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * Hosts the connectivity test may reach even when they resolve to loopback: those the operator
 * listed, and those of providers the operator wrote into voxgate.yaml (e.g. Ollama on localhost).
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
  return hosts;
}
