import type { ScrapeSource } from "./targets.js";

/**
 * A small reader of the Prometheus text exposition format (version 0.0.4): one sample per line,
 * `name{label="value",…} value [timestamp]`, `#` lines skipped. Hand-written because Voxgate keeps
 * flat samples of an allowlist, and the npm parsers regroup families (histograms into objects).
 */

export interface PromSample {
  metric: string;
  labels: Record<string, string>;
  value: number;
}

/** Most series kept from one scrape of one target: a bounded subset, whatever the exporter sends. */
export const MAX_SERIES_PER_SCRAPE = 500;

/**
 * The series kept per source (exact names, or prefixes ending in `_`/`*`). Histogram buckets are
 * dropped (`_sum`/`_count` kept): they multiply series and the node view needs rates, not shapes.
 */
export const SERIES_ALLOWLIST: Record<ScrapeSource, readonly string[]> = {
  "livekit-server": [
    "livekit_room_total",
    "livekit_participant_total",
    "livekit_track_published_total",
    "livekit_track_subscribed_total",
    "livekit_packet_total",
    "livekit_packet_bytes",
    "livekit_nack_total",
    "livekit_pli_total",
    "livekit_fir_total",
    "livekit_packet_loss*",
    "livekit_jitter_us*",
    "livekit_forward_latency*",
    "livekit_forward_jitter*",
    "livekit_node_*",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "go_goroutines",
  ],
  "livekit-sip": ["livekit_sip_*", "process_cpu_seconds_total", "process_resident_memory_bytes", "go_goroutines"],
  "host-exporter": [
    "node_load1",
    "node_load5",
    "node_load15",
    "node_cpu_seconds_total",
    "node_memory_MemTotal_bytes",
    "node_memory_MemAvailable_bytes",
    "node_network_receive_bytes_total",
    "node_network_transmit_bytes_total",
    "node_network_receive_drop_total",
    "node_network_transmit_drop_total",
    "node_netstat_Udp_InErrors",
    "node_netstat_Udp_RcvbufErrors",
    "node_netstat_Udp_SndbufErrors",
    "node_sockstat_UDP_inuse",
  ],
};

export function allowed(source: ScrapeSource, metric: string): boolean {
  if (metric.endsWith("_bucket")) return false;
  return SERIES_ALLOWLIST[source].some((p) => (p.endsWith("*") ? metric.startsWith(p.slice(0, -1)) : metric === p));
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

/** Parses one sample line; null for a line that is not a well-formed sample (skipped, never fatal). */
export function parseSampleLine(line: string): PromSample | null {
  const nameMatch = NAME.exec(line);
  if (!nameMatch) return null;
  const metric = nameMatch[0];
  let i = metric.length;
  const labels: Record<string, string> = {};
  if (line[i] === "{") {
    i++;
    for (;;) {
      while (line[i] === " " || line[i] === ",") i++;
      if (line[i] === "}") {
        i++;
        break;
      }
      const ln = LABEL_NAME.exec(line.slice(i));
      if (!ln) return null;
      i += ln[0].length;
      while (line[i] === " ") i++;
      if (line[i] !== "=" || line[i + 1] !== '"') return null;
      i += 2;
      let value = "";
      for (;;) {
        const ch = line[i];
        if (ch === undefined) return null;
        if (ch === "\\") {
          const next = line[i + 1];
          value += next === "n" ? "\n" : (next ?? "");
          i += 2;
          continue;
        }
        i++;
        if (ch === '"') break;
        value += ch;
      }
      labels[ln[0]] = value;
    }
  }
  const rest = line.slice(i).trim().split(/\s+/);
  const raw = rest[0];
  if (raw === undefined || raw === "") return null;
  const value = Number(raw);
  if (!Number.isFinite(value)) return null;
  return { metric, labels, value };
}

/** The allowlisted samples of one exposition text, at most MAX_SERIES_PER_SCRAPE. */
export function parseExposition(text: string, source: ScrapeSource): { samples: PromSample[]; truncated: boolean } {
  const samples: PromSample[] = [];
  for (const rawLine of text.split("\n")) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#")) continue;
    const s = parseSampleLine(line);
    if (!s || !allowed(source, s.metric)) continue;
    if (samples.length >= MAX_SERIES_PER_SCRAPE) return { samples, truncated: true };
    samples.push(s);
  }
  return { samples, truncated: false };
}
