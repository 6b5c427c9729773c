import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { storedSamples } from "../rollups/sketch-json.js";
import { addSample, EXACT_SAMPLE_LIMIT, emptySketch, type LatencySketch, summarize } from "../stats/summary.js";
import type { LatencyReport, ModelLatency } from "./schemas.js";
import { queryRows, type ReportScope, segmentsUnion } from "./sources.js";
import { type Period, windowSegments } from "./window.js";

/** The answer of GET /v1/latency: its types are the schema's (src/reports/schemas.ts). */
export type { LatencyReport, ModelLatency } from "./schemas.js";

interface ModelSketches {
  modality: string;
  provider: string;
  requests: number;
  ttfb: LatencySketch;
  latency: LatencySketch;
}

interface ModelTotalsRow {
  model_id: string;
  modality: string;
  provider: string;
  requests: string | number;
  tc: number | null;
  ts: number | null;
  tmin: number | null;
  tmax: number | null;
  tz: number | null;
  lc: number | null;
  ls: number | null;
  lmin: number | null;
  lmax: number | null;
  lz: number | null;
  /** Every rollup sketch's raw samples (one array per sketch) when all kept them and the total is within the bound. */
  tsamples: unknown[] | null;
  lsamples: unknown[] | null;
}

interface BucketRow {
  model_id: string;
  which: "t" | "l";
  k: string;
  n: number;
}

interface RawRow {
  model_id: string;
  modality: string;
  provider: string;
  ttfb_ms: number | null;
  total_latency_ms: number | null;
}

/**
 * The raw samples of a group of stored sketches, one JSON array per sketch, when every sketch kept
 * them and their total count is within EXACT_SAMPLE_LIMIT; else NULL (the buckets answer).
 */
function samplesOf(column: "th" | "lh"): SQL {
  const c = sql.raw(column);
  return sql`CASE WHEN coalesce(sum((${c}->>'count')::float8), 0) <= ${sql.raw(String(EXACT_SAMPLE_LIMIT))}
    AND coalesce(bool_and(jsonb_typeof(${c}->'samples') = 'array') FILTER (WHERE ${c} IS NOT NULL), true)
    THEN coalesce(jsonb_agg(${c}->'samples') FILTER (WHERE ${c} IS NOT NULL), '[]'::jsonb) END`;
}

function bucketSums(db: Db, rolled: SQL, segments: number, which: "t" | "l", column: "th" | "lh"): Promise<BucketRow[]> {
  if (segments === 0) return Promise.resolve([]);
  return queryRows<BucketRow>(
    db,
    sql`${rolled} SELECT model_id, ${which}::text AS which, b.key AS k, sum(b.value::float8) AS n
      FROM r, jsonb_each_text(r.${sql.raw(column)}->'buckets') b GROUP BY 1, 2, 3`,
  );
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
  // Rollup sketches are merged inside Postgres (sums per model and per sketch bucket), so a week of
  // buckets comes back as a few hundred small rows instead of a thousand JSON documents.
  const rolled = sql`WITH r AS (${segmentsUnion(
    rollupSegs,
    args,
    { rollup: sql`model_id, modality, provider, requests, ttfb_hist AS th, latency_hist AS lh`, raw: none },
    { excludeProbe: true, allProjects: true },
  )})`;
  const f = (col: string, field: string) => sql.raw(`(${col}->>'${field}')::float8`);
  const [totals, ttfbBuckets, latencyBuckets, raw] = await Promise.all([
    rollupSegs.length === 0
      ? []
      : queryRows<ModelTotalsRow>(
          db,
          sql`${rolled} SELECT model_id, min(modality) AS modality, min(provider) AS provider, sum(requests) AS requests,
            sum(${f("th", "count")}) AS tc, sum(${f("th", "sum")}) AS ts, min(${f("th", "min")}) AS tmin, max(${f("th", "max")}) AS tmax,
            sum(${f("th", "zeros")}) AS tz, sum(${f("lh", "count")}) AS lc, sum(${f("lh", "sum")}) AS ls, min(${f("lh", "min")}) AS lmin,
            max(${f("lh", "max")}) AS lmax, sum(${f("lh", "zeros")}) AS lz, ${samplesOf("th")} AS tsamples, ${samplesOf("lh")} AS lsamples
          FROM r GROUP BY model_id`,
        ),
    // TTFB and total-latency buckets as two statements: they run side by side on two connections.
    bucketSums(db, rolled, rollupSegs.length, "t", "th"),
    bucketSums(db, rolled, rollupSegs.length, "l", "lh"),
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
  const fill = (s: LatencySketch, count: number | null, sum: number | null, min: number | null, max: number | null, zeros: number | null, samples: unknown[] | null) => {
    if (!count) return;
    const raw = samples === null ? null : storedSamples(samples.flat(), Number(count));
    s.samples = s.samples && raw && s.count + raw.length <= EXACT_SAMPLE_LIMIT ? s.samples.concat(raw) : null;
    s.count += Number(count);
    s.sum += Number(sum ?? 0);
    s.min = Math.min(s.min, Number(min ?? Number.POSITIVE_INFINITY));
    s.max = Math.max(s.max, Number(max ?? Number.NEGATIVE_INFINITY));
    s.zeros += Number(zeros ?? 0);
  };
  for (const r of totals) {
    const e = entry(r);
    e.requests += Number(r.requests);
    fill(e.ttfb, r.tc, r.ts, r.tmin, r.tmax, r.tz, r.tsamples);
    fill(e.latency, r.lc, r.ls, r.lmin, r.lmax, r.lz, r.lsamples);
  }
  for (const b of [...ttfbBuckets, ...latencyBuckets]) {
    const e = out.get(b.model_id);
    if (!e) continue;
    const s = b.which === "t" ? e.ttfb : e.latency;
    s.buckets[b.k] = (s.buckets[b.k] ?? 0) + Number(b.n);
  }
  for (const r of raw) {
    const e = entry(r);
    e.requests += 1;
    if (r.ttfb_ms !== null) addSample(e.ttfb, Number(r.ttfb_ms));
    if (r.total_latency_ms !== null) addSample(e.latency, Number(r.total_latency_ms));
  }
  return out;
}

export async function latencyReport(db: Db, args: ReportScope & { period: Exclude<Period, "all">; now?: Date }): Promise<LatencyReport> {
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
