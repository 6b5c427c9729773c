import { isIP } from "node:net";

/**
 * With authentication off every caller is the operator, so a web page must not be able to act as one:
 * a page can make the browser send a "simple" cross-site POST (text/plain, no preflight) or open a
 * WebSocket to http://127.0.0.1, and a DNS-rebinding page reaches it under its own host name. With
 * auth off the server therefore answers only requests whose Host names loopback (localhost,
 * *.localhost, 127.0.0.0/8, [::1]) or a serve.allowed_hosts entry, and refuses any whose Origin names
 * another host or whose Sec-Fetch-Site says cross-site. Requests without these headers (curl, SDKs,
 * agents) are unaffected. With auth on nothing here applies: a page cannot present the key.
 */

/** The host name of a Host header or an origin's authority, lower-cased, without port or brackets. */
function hostName(authority: string): string {
  const a = authority.trim().toLowerCase();
  if (a.startsWith("[")) return a.slice(1, a.indexOf("]") > 0 ? a.indexOf("]") : undefined);
  const colon = a.lastIndexOf(":");
  return colon >= 0 && a.indexOf(":") === colon ? a.slice(0, colon) : a;
}

/** A host name that can only mean this machine. */
export function isLoopbackName(name: string): boolean {
  if (name === "localhost" || name.endsWith(".localhost") || name === "::1") return true;
  return isIP(name) === 4 && name.startsWith("127.");
}

/** The paths answered whatever the Host: liveness probes (container orchestrators use the pod's address). */
const ANY_HOST_PATHS = new Set(["/health"]);

/**
 * Why a request must be refused while auth is off, or null. `header` reads a request header by its
 * lower-case name; `allowedHosts` is serve.allowed_hosts.
 */
export function authOffRefusal(header: (name: string) => string | undefined, path: string, allowedHosts: readonly string[]): string | null {
  const allowed = (name: string) => isLoopbackName(name) || allowedHosts.some((h) => h.toLowerCase() === name);
  const host = header("host");
  if (host !== undefined && !ANY_HOST_PATHS.has(path) && !allowed(hostName(host))) {
    return `authentication is off: Host ${JSON.stringify(host.slice(0, 100))} is not a loopback name or in serve.allowed_hosts`;
  }
  const site = header("sec-fetch-site")?.toLowerCase();
  if (site === "cross-site") return "authentication is off: cross-site requests are refused";
  const origin = header("origin");
  if (origin !== undefined) {
    let name: string | null = null;
    try {
      name = origin === "null" ? null : new URL(origin).hostname.replace(/^\[|\]$/g, "").toLowerCase();
    } catch {
      name = null;
    }
    if (name === null || !allowed(name)) return `authentication is off: requests from origin ${JSON.stringify(origin.slice(0, 100))} are refused`;
  }
  return null;
}
