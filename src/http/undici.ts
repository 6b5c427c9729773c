import type * as Undici from "undici";

/**
 * undici, imported on first use. Its import is ~0.2 s of CPU, about a seventh of a server's start
 * (docs/perf/startup.md), and nothing before the first outbound call needs it: the gateway's
 * upstream pools, provider tests, the node scraper and the sidecar's client load it here. The server
 * warms it once it listens (src/server.ts), so the first gateway call does not wait for it.
 */
let loading: Promise<typeof Undici> | null = null;

export function loadUndici(): Promise<typeof Undici> {
  loading ??= import("undici");
  return loading;
}
