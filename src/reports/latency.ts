import { sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { sketchFromJson } from "../rollups/sketch-json.js";
import { addSample, emptySketch, type LatencySketch, mergeSketch, summarize } from "../stats/summary.js";
import { queryRows, type ReportScope, segmentsUnion } from "./sources.js";
import { type Period, windowSegments } from "./window.js";

/** Per-model statistics of GET /v1/latency; every latency in milliseconds, null without samples. */
export interface ModelLatency {
  modality: string;
  provider: string;
  requests: number;
  ttfb_samples: number;
  avg_ttfb_ms: number | null;
  p50_ttfb_ms: number | null;
  p95_ttfb_ms: number | null;
  p99_ttfb_ms: number | null;
  total_latency_samples: number;
  avg_total_latency_ms: number | null;
  p50_total_latency_ms: number | null;
  p95_total_latency_ms: number | null;
  p99_total_latency_ms: number | null;
}

export interface LatencyReport {
  period: Period;
  project: string | null;
  models: Record<string, ModelLatency>;
}

interface ModelSketches {
  modality: string;
  provider: string;
  requests: number;
  ttfb: LatencySketch;
  latency: LatencySketch;
}

interface RollupRow {
  model_id: string;
  modality: string;
  provider: string;
  requests: string | number;
  ttfb_hist: unknown;
  latency_hist: unknown;
}

interface RawRow {
  model_id: string;
  modality: string;
  provider: string;
  ttfb_ms: number | null;
  total_latency_ms: number | null;
}

/**
 * Latency sketches per model over a period, probe traffic excluded: rollup sketches merged for whole
 * buckets, raw samples added for the edge hours. Percentiles come from src/stats/summary.ts.
 */
export async function latencySketches(db: Db, args: ReportScope & { period: Period; now?: Date }): Promise<Map<string, ModelSketches>> {
  const segments = windowSegments(args.period, args.now ?? new Date());
  const rollupSegs = segments.filter((s) => s.source !== "raw");
  const rawSegs = segments.filter((s) => s.source === "raw");
  const none = sql`SELECT NULL WHERE false`;
  const [rolled, raw] = await Promise.all([
    rollupSegs.length === 0
      ? []
      : queryRows<RollupRow>(
          db,
          segmentsUnion(rollupSegs, args, { rollup: sql`model_id, modality, provider, requests, ttfb_hist, latency_hist`, raw: none }, { excludeProbe: true }),
        ),
    queryRows<RawRow>(
      db,
      segmentsUnion(rawSegs, args, { rollup: none, raw: sql`model_id, modality, provider, ttfb_ms, total_latency_ms` }, { excludeProbe: true }),
    ),
  ]);
  const out = new Map<string, ModelSketches>();
  const entry = (r: { model_id: string; modality: string; provider: string }) => {
    let e = out.get(r.model_id);
    if (!e) {
      e = { modality: r.modality, provider: r.provider, requests: 0, ttfb: emptySketch(), latency: emptySketch() };
      out.set(r.model_id, e);
    }
    return e;
  };
  for (const r of rolled) {
    const e = entry(r);
    e.requests += Number(r.requests);
    mergeSketch(e.ttfb, sketchFromJson(r.ttfb_hist));
    mergeSketch(e.latency, sketchFromJson(r.latency_hist));
  }
  for (const r of raw) {
    const e = entry(r);
    e.requests += 1;
    if (r.ttfb_ms !== null) addSample(e.ttfb, Number(r.ttfb_ms));
    if (r.total_latency_ms !== null) addSample(e.latency, Number(r.total_latency_ms));
  }
  return out;
}

export async function latencyReport(db: Db, args: ReportScope & { period: Period; now?: Date }): Promise<LatencyReport> {
  const sketches = await latencySketches(db, args);
  const models: Record<string, ModelLatency> = {};
  for (const [modelId, s] of [...sketches.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const t = summarize(s.ttfb);
    const l = summarize(s.latency);
    models[modelId] = {
      modality: s.modality,
      provider: s.provider,
      requests: s.requests,
      ttfb_samples: s.ttfb.count,
      avg_ttfb_ms: t?.avg ?? null,
      p50_ttfb_ms: t?.p50 ?? null,
      p95_ttfb_ms: t?.p95 ?? null,
      p99_ttfb_ms: t?.p99 ?? null,
      total_latency_samples: s.latency.count,
      avg_total_latency_ms: l?.avg ?? null,
      p50_total_latency_ms: l?.p50 ?? null,
      p95_total_latency_ms: l?.p95 ?? null,
      p99_total_latency_ms: l?.p99 ?? null,
    };
  }
  return { period: args.period, project: args.project, models };
}
