/** The scrape sources Voxgate knows (media-server, media-sip, host-exporter: docs/api/sessions.md). */
export const SCRAPE_SOURCES = ["livekit-server", "livekit-sip", "host-exporter"] as const;
export type ScrapeSource = (typeof SCRAPE_SOURCES)[number];

/** A node name is what samples are filed under: short, printable, no separators of the list syntax. */
const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export interface ScrapeTarget {
  source: ScrapeSource;
  /** The node the samples are filed under; two sources with one name share one time axis. */
  node: string;
  /** The URL without credentials (what is requested). */
  url: URL;
  /** `Basic …` from the URL's user:password (percent-decoded), or null. Never logged. */
  authorization: string | null;
  /** The parsed URL with its credentials replaced by ***: safe to log. */
  display: string;
}

export interface SkippedEntry {
  /** 1-based position in the comma-separated list. */
  position: number;
  reason: string;
  /** The entry with any URL credentials masked. */
  display: string;
}

/**
 * Parses VOXGATE_NODE_SCRAPE_TARGETS: comma-separated `source:name=url`. Malformed entries are
 * returned as skipped (the caller warns and carries on); empty entries (",,") are ignored.
 */
export function parseScrapeTargets(raw: string | undefined): { targets: ScrapeTarget[]; skipped: SkippedEntry[] } {
  const targets: ScrapeTarget[] = [];
  const skipped: SkippedEntry[] = [];
  const entries = (raw ?? "").split(",");
  entries.forEach((rawEntry, i) => {
    const entry = rawEntry.trim();
    if (entry === "") return;
    const result = parseEntry(entry);
    if ("reason" in result) skipped.push({ position: i + 1, reason: result.reason, display: maskEntry(entry) });
    else targets.push(result);
  });
  return { targets, skipped };
}

function parseEntry(entry: string): ScrapeTarget | { reason: string } {
  const colon = entry.indexOf(":");
  const eq = entry.indexOf("=");
  if (colon <= 0 || eq <= colon + 1) return { reason: "expected source:name=url" };
  const source = entry.slice(0, colon).trim();
  const node = entry.slice(colon + 1, eq).trim();
  const rawUrl = entry.slice(eq + 1).trim();
  if (!(SCRAPE_SOURCES as readonly string[]).includes(source)) {
    return { reason: `unknown source "${source}" (one of ${SCRAPE_SOURCES.join(", ")})` };
  }
  if (!NODE_NAME.test(node)) return { reason: "node name must be 1-128 of A-Z a-z 0-9 . _ : -" };
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return { reason: "url does not parse" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { reason: "url must be http or https" };
  let authorization: string | null = null;
  const hadCredentials = url.username !== "" || url.password !== "";
  if (hadCredentials) {
    try {
      const user = decodeURIComponent(url.username);
      const password = decodeURIComponent(url.password);
      authorization = `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;
    } catch {
      return { reason: "url credentials are not valid percent-encoding" };
    }
    url.username = "";
    url.password = "";
  }
  url.hash = "";
  // Built from the parsed URL (credentials already removed), never by editing the raw text: a raw
  // `@` inside the password would otherwise leave the rest of it in the log.
  const display = `${url.protocol}//${hadCredentials ? "***@" : ""}${url.host}${url.pathname}${url.search}`;
  return { source: source as ScrapeSource, node, url, authorization, display };
}

/**
 * A malformed entry for a log line: it did not parse, so everything from the scheme to the LAST `@`
 * (where a URL's credentials end, whatever characters the password holds) is masked.
 */
function maskEntry(entry: string): string {
  const at = entry.lastIndexOf("@");
  const scheme = entry.indexOf("://");
  if (at === -1) return entry;
  return scheme !== -1 && scheme < at ? `${entry.slice(0, scheme + 3)}***${entry.slice(at)}` : `***${entry.slice(at)}`;
}
