import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { sketchBucketSql, storedSamples } from "../rollups/sketch-json.js";
import { EXACT_SAMPLE_LIMIT, emptySketch, type LatencySketch, summarize } from "../stats/summary.js";
import type { LatencyReport, ModelLatency } from "./schemas.js";
import { queryRows, type ReportScope, segmentsUnion } from "./sources.js";
import { type Period, type Segment, windowSegments } from "./window.js";

/** The answer of GET /v1/latency: its types are the schema's (src/reports/schemas.ts). */
export type { LatencyReport, ModelLatency } from "./schemas.js";

interface ModelSketches {
  modality: string;
  provider: string;
  requests: number;
  ttfb: LatencySketch;
  latency: LatencySketch;
}

/** One part of a model's sketches: the rollup rows' sums, or the raw edge rows' (one row each per model). */
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
  /** The part's raw samples (one array per stored sketch) when the model's whole window holds at most EXACT_SAMPLE_LIMIT; else NULL. */
  tsamples: unknown[] | null;
  lsamples: unknown[] | null;
}

interface BucketRow {
  model_id: string;
  k: string;
  n: number;
}

const LIMIT = sql.raw(String(EXACT_SAMPLE_LIMIT));

/** The two sketches of a model: the rollup columns (count, sketch) and the raw column of each. */
const SKETCHES = { t: { count: "tn", hist: "th", raw: "ttfb_ms" }, l: { count: "ln", hist: "lh", raw: "total_latency_ms" } } as const;
type Which = keyof typeof SKETCHES;

/**
 * The window's sources as CTEs: `r`, the rollup rows (with their sample counts as plain columns),
 * `x`, the raw edge rows, and `n`, each model's sample count over the whole window, which says
 * whether its sketches can be exact (raw samples are read only then).
 */
function windowCtes(rollupSegs: Segment[], rawSegs: Segment[], scope: ReportScope): SQL {
  const none = sql`SELECT NULL WHERE false`;
  const r = segmentsUnion(
    rollupSegs,
    scope,
    { rollup: sql`model_id, modality, provider, requests, ttfb_count AS tn, latency_count AS ln, ttfb_hist AS th, latency_hist AS lh`, raw: none },
    { excludeProbe: true, allProjects: true },
  );
  const x = segmentsUnion(rawSegs, scope, { rollup: none, raw: sql`model_id, modality, provider, ttfb_ms, total_latency_ms` }, { excludeProbe: true });
  const empty = (cols: string) => sql.raw(`SELECT ${cols} WHERE false`);
  return sql`WITH r (model_id, modality, provider, requests, tn, ln, th, lh) AS (${rollupSegs.length > 0 ? r : empty("''::text, ''::text, ''::text, 0::bigint, 0, 0, NULL::jsonb, NULL::jsonb")}),
    x (model_id, modality, provider, ttfb_ms, total_latency_ms) AS (${rawSegs.length > 0 ? x : empty("''::text, ''::text, ''::text, 0::float8, 0::float8")}),
    n AS (SELECT model_id, sum(tn) AS tn, sum(ln) AS ln FROM (
      SELECT model_id, tn, ln FROM r UNION ALL SELECT model_id, (ttfb_ms IS NOT NULL)::int, (total_latency_ms IS NOT NULL)::int FROM x) u GROUP BY model_id)`;
}

/**
 * Per model: the rollup part (stored sketches' fields read once per sketch with jsonb_to_record) and
 * the raw part (aggregated here, not shipped row by row), each with its samples only when the model's
 * window is small enough to be exact: a week's stored samples were aggregated and thrown away.
 */
function totalsSql(ctes: SQL): SQL {
  const rolled = (w: Which) => {
    const { count, hist } = SKETCHES[w];
    const c = sql.raw(`r.${hist}`);
    const small = sql.raw(`n.${count} <= ${EXACT_SAMPLE_LIMIT}`);
    return sql`sum(r.${sql.raw(count)}) AS ${sql.raw(`${w}c`)}, sum(${sql.raw(w)}.sum) AS ${sql.raw(`${w}s`)}, min(${sql.raw(w)}.min) AS ${sql.raw(`${w}min`)},
      max(${sql.raw(w)}.max) AS ${sql.raw(`${w}max`)}, sum(${sql.raw(w)}.zeros) AS ${sql.raw(`${w}z`)},
      CASE WHEN min(n.${sql.raw(count)}) <= ${LIMIT} AND coalesce(bool_and(jsonb_typeof(${c}->'samples') = 'array') FILTER (WHERE ${c} IS NOT NULL AND ${small}), true)
        THEN coalesce(jsonb_agg(${c}->'samples') FILTER (WHERE ${c} IS NOT NULL AND ${small}), '[]'::jsonb) END AS ${sql.raw(`${w}samples`)}`;
  };
  const raw = (w: Which) => {
    const { count, raw: col } = SKETCHES[w];
    const v = sql.raw(`x.${col}`);
    return sql`count(${v}) AS ${sql.raw(`${w}c`)}, sum(${v}) AS ${sql.raw(`${w}s`)}, min(${v}) AS ${sql.raw(`${w}min`)}, max(${v}) AS ${sql.raw(`${w}max`)},
      count(*) FILTER (WHERE ${v} <= 1e-9) AS ${sql.raw(`${w}z`)},
      CASE WHEN min(n.${sql.raw(count)}) <= ${LIMIT} THEN jsonb_build_array(coalesce(jsonb_agg(${v}) FILTER (WHERE ${v} IS NOT NULL), '[]'::jsonb)) END AS ${sql.raw(`${w}samples`)}`;
  };
  const fields = "sum float8, min float8, max float8, zeros float8";
  return sql`${ctes}
    SELECT r.model_id, min(r.modality) AS modality, min(r.provider) AS provider, sum(r.requests) AS requests, ${rolled("t")}, ${rolled("l")}
      FROM r JOIN n USING (model_id)
      LEFT JOIN LATERAL jsonb_to_record(r.th) AS t(${sql.raw(fields)}) ON true
      LEFT JOIN LATERAL jsonb_to_record(r.lh) AS l(${sql.raw(fields)}) ON true
     GROUP BY r.model_id
    UNION ALL
    SELECT x.model_id, min(x.modality), min(x.provider), count(*), ${raw("t")}, ${raw("l")}
      FROM x JOIN n USING (model_id) GROUP BY x.model_id`;
}

/** One sketch's bucket counts per model: the stored sketches' buckets summed, and the raw edge samples' buckets. */
function bucketsSql(ctes: SQL, w: Which): SQL {
  const { hist, raw } = SKETCHES[w];
  const v = sql.raw(`x.${raw}`);
  return sql`${ctes}
    SELECT r.model_id, b.key AS k, sum(b.value::float8) AS n FROM r, jsonb_each(r.${sql.raw(hist)}->'buckets') b GROUP BY 1, 2
    UNION ALL
    SELECT x.model_id, ${sketchBucketSql(v)}::text, count(*) FROM x WHERE ${v} > 1e-9 GROUP BY 1, 2`;
}

/**
 * Latency sketches per model over a period, probe traffic excluded: rollup sketches merged for whole
 * buckets, the raw edge hours' samples added, all inside Postgres (sums per model and per sketch
 * bucket), so a week comes back as a few hundred small rows whatever the traffic. Percentiles come
 * from src/stats/summary.ts.
 */
export async function latencySketches(db: Db, args: ReportScope & { period: Period; now?: Date }): Promise<Map<string, ModelSketches>> {
  const segments = windowSegments(args.period, args.now ?? new Date());
  const ctes = windowCtes(
    segments.filter((s) => s.source !== "raw"),
    segments.filter((s) => s.source === "raw"),
    args,
  );
  // Three statements side by side on the pool's connections: totals, TTFB buckets, total-latency buckets.
  const [totals, ttfbBuckets, latencyBuckets] = await Promise.all([
    queryRows<ModelTotalsRow>(db, totalsSql(ctes)),
    queryRows<BucketRow>(db, bucketsSql(ctes, "t")),
    queryRows<BucketRow>(db, bucketsSql(ctes, "l")),
  ]);
  const out = new Map<string, ModelSketches>();
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
    let e = out.get(r.model_id);
    if (!e) {
      e = { modality: r.modality, provider: r.provider, requests: 0, ttfb: emptySketch(), latency: emptySketch() };
      out.set(r.model_id, e);
    }
    e.requests += Number(r.requests);
    fill(e.ttfb, r.tc, r.ts, r.tmin, r.tmax, r.tz, r.tsamples);
    fill(e.latency, r.lc, r.ls, r.lmin, r.lmax, r.lz, r.lsamples);
  }
  const addBucketRows = (rows: BucketRow[], pick: (e: ModelSketches) => LatencySketch) => {
    for (const b of rows) {
      const e = out.get(b.model_id);
      if (!e) continue;
      const s = pick(e);
      s.buckets[b.k] = (s.buckets[b.k] ?? 0) + Number(b.n);
    }
  };
  addBucketRows(ttfbBuckets, (e) => e.ttfb);
  addBucketRows(latencyBuckets, (e) => e.latency);
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
