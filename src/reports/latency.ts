import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { mergeStoredSketch } from "../rollups/sketch-json.js";
import { addSample, EXACT_SAMPLE_LIMIT, emptySketch, type LatencySketch, summarize } from "../stats/summary.js";
import type { LatencyReport, ModelLatency } from "./schemas.js";
import { queryRows, type ReportScope, segmentsUnion } from "./sources.js";
import { type Period, type ReportSegment, reportSegments } from "./window.js";

/** The answer of GET /v1/latency: its types are the schema's (src/reports/schemas.ts). */
export type { LatencyReport, ModelLatency } from "./schemas.js";

interface ModelSketches {
  modality: string;
  provider: string;
  requests: number;
  ttfb: LatencySketch;
  latency: LatencySketch;
}

/** One part of a model's sketches: a rollup row's stored sketches, or the raw edge rows' sketches built in SQL. */
interface PartRow {
  model_id: string;
  modality: string;
  provider: string;
  requests: string | number;
  th: unknown;
  lh: unknown;
  /** A raw edge row's TTFB and total latency (null on rollup rows). */
  tv: number | null;
  lv: number | null;
}


/** The two sketches of a model: the rollup columns (count, sketch) and the raw column of each. */
const SKETCHES = { t: { count: "tn", hist: "th", raw: "ttfb_ms" }, l: { count: "ln", hist: "lh", raw: "total_latency_ms" } } as const;
type Which = keyof typeof SKETCHES;

/**
 * The window's sources as CTEs: `r`, the rollup rows (with their sample counts as plain columns),
 * `x`, the raw edge rows, and `n`, each model's sample count over the whole window, which says
 * whether its sketches can be exact (raw samples are read only then).
 */
function windowCtes(segments: ReportSegment[], scope: ReportScope): SQL {
  const empty = (cols: string) => sql.raw(`SELECT ${cols} WHERE false`);
  const r = segmentsUnion(
    segments,
    scope,
    { rollup: sql`model_id, modality, provider, requests, ttfb_count AS tn, latency_count AS ln, ttfb_hist AS th, latency_hist AS lh`, raw: null },
    { excludeProbe: true, allProjects: true },
  );
  const x = segmentsUnion(segments, scope, { rollup: null, raw: sql`model_id, modality, provider, ttfb_ms, total_latency_ms` }, { excludeProbe: true });
  return sql`WITH r (model_id, modality, provider, requests, tn, ln, th, lh) AS (${r ?? empty("''::text, ''::text, ''::text, 0::bigint, 0, 0, NULL::jsonb, NULL::jsonb")}),
    x (model_id, modality, provider, ttfb_ms, total_latency_ms) AS (${x ?? empty("''::text, ''::text, ''::text, 0::float8, 0::float8")}),
    n AS (SELECT model_id, sum(tn) AS tn, sum(ln) AS ln FROM (
      SELECT model_id, tn, ln FROM r UNION ALL SELECT model_id, (ttfb_ms IS NOT NULL)::int, (total_latency_ms IS NOT NULL)::int FROM x) u GROUP BY model_id)`;
}

/**
 * One row per stored sketch pair (rollup rows, without their raw samples unless the model's whole
 * window is small enough to be exact), then the raw edge rows' two values each, which Node adds to
 * the sketches (addSample): cheaper than building their sketches in SQL (four passes over the rows).
 * Node merges the stored sketches (mergeStoredSketch): summing their buckets in SQL (jsonb_each per
 * stored sketch, then a hash aggregate) cost more than the whole read and grew with each sketch's
 * distinct buckets.
 */
function partsSql(ctes: SQL): SQL {
  const stored = (w: Which) => {
    const { count, hist } = SKETCHES[w];
    // A stored sketch past the bound has no samples: rebuilt without them only when it has some.
    return sql.raw(`CASE WHEN n.${count} <= ${EXACT_SAMPLE_LIMIT} OR r.${count} > ${EXACT_SAMPLE_LIMIT} THEN r.${hist} ELSE r.${hist} - 'samples' END`);
  };
  return sql`${ctes}
    SELECT r.model_id, r.modality, r.provider, r.requests, ${stored("t")} AS th, ${stored("l")} AS lh, NULL::float8 AS tv, NULL::float8 AS lv
      FROM r JOIN n USING (model_id)
    UNION ALL
    SELECT model_id, modality, provider, 1, NULL, NULL, ttfb_ms, total_latency_ms FROM x`;
}

/**
 * Latency sketches per model over a period, probe traffic excluded: rollup sketches for whole
 * buckets (today's from its day rows), the raw edge hour's samples added, in one statement whose rows
 * are a few hundred stored sketches and the edge hour's rows. Percentiles come from src/stats/summary.ts.
 */
export async function latencySketches(db: Db, args: ReportScope & { period: Period; now?: Date }): Promise<Map<string, ModelSketches>> {
  const rows = await queryRows<PartRow>(db, partsSql(windowCtes(reportSegments(args.period, args.now ?? new Date()), args)));
  const out = new Map<string, ModelSketches>();
  for (const r of rows) {
    let e = out.get(r.model_id);
    if (!e) {
      e = { modality: r.modality, provider: r.provider, requests: 0, ttfb: emptySketch(), latency: emptySketch() };
      out.set(r.model_id, e);
    }
    e.requests += Number(r.requests);
    if (r.th !== null || r.lh !== null) {
      mergeStoredSketch(e.ttfb, r.th);
      mergeStoredSketch(e.latency, r.lh);
    }
    if (r.tv !== null) addSample(e.ttfb, r.tv);
    if (r.lv !== null) addSample(e.latency, r.lv);
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
