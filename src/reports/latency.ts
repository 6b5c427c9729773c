import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { type LatencySketch, summarize } from "../stats/summary.js";
import { mergeParts, type ParsedSketch, ROW_VERSION, readSketchRows, type SketchCache, type SketchRow, sketchCacheOf, sketchOfParts } from "./sketch-cache.js";
import type { LatencyReport, ModelLatency } from "./schemas.js";
import { type ReportScope, segmentsUnion } from "./sources.js";
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

/** A row of the window: a rollup row (its version and, unless cached, its stored sketches) or one model's raw edge values. */
interface PartRow extends SketchRow {
  model_id: string;
  modality: string;
  provider: string;
  requests: string | number;
  /** A model's raw edge rows' TTFB and total latencies, comma-separated (null on rollup rows, or when none has one). */
  tv: string | null;
  lv: string | null;
}

/**
 * The window's rollup rows with their versions, and its raw edge rows' values, in one statement. A
 * rollup row whose version is in `known` comes without its sketches (NULL): the caller has them parsed
 * (src/reports/sketch-cache.ts), and Postgres never reads those sketches' TOAST. The raw edge (up to an
 * hour of rows, ten times as many at ten times the traffic) comes as one row per model with its values
 * as text: a row per request cost ~1 µs each to receive and parse.
 */
function partsSql(segments: ReportSegment[], scope: ReportScope, known: SQL): SQL {
  const empty = (cols: string) => sql.raw(`SELECT ${cols} WHERE false`);
  const r = segmentsUnion(
    segments,
    scope,
    {
      rollup: sql`model_id, modality, provider, requests, ${ROW_VERSION} AS v, ttfb_hist AS th, latency_hist AS lh`,
      raw: null,
    },
    { excludeProbe: true, allProjects: true },
  );
  const x = segmentsUnion(segments, scope, { rollup: null, raw: sql`model_id, modality, provider, ttfb_ms, total_latency_ms` }, { excludeProbe: true });
  return sql`WITH r (model_id, modality, provider, requests, v, th, lh) AS (${r ?? empty("''::text, ''::text, ''::text, 0::bigint, ''::text, NULL::jsonb, NULL::jsonb")}),
    x (model_id, modality, provider, ttfb_ms, total_latency_ms) AS (${x ?? empty("''::text, ''::text, ''::text, 0::float8, 0::float8")})
    SELECT r.model_id, r.modality, r.provider, r.requests, r.v, k.kv IS NOT NULL AS cached, CASE WHEN k.kv IS NULL THEN r.th END AS th,
      CASE WHEN k.kv IS NULL THEN r.lh END AS lh, NULL::text AS tv, NULL::text AS lv FROM r LEFT JOIN ${known} k ON k.kv = r.v
    UNION ALL
    SELECT model_id, modality, provider, count(*), NULL, NULL, NULL, NULL, string_agg(ttfb_ms::text, ','), string_agg(total_latency_ms::text, ',')
      FROM x GROUP BY model_id, modality, provider`;
}

/** One model's parts before they are merged. */
interface ModelParts {
  modality: string;
  provider: string;
  requests: number;
  /** Its rollup rows' versions and parsed sketches. */
  versions: string[];
  ttfb: ParsedSketch[];
  latency: ParsedSketch[];
  rawTtfb: number[];
  rawLatency: number[];
}

/**
 * Latency sketches per model over a period, probe traffic excluded: rollup sketches for whole
 * buckets (today's from its day rows), the raw edge hour's samples added. Rollup sketches come from
 * the database handle's cache when their row has not changed since the last answer of the same
 * tenant, project and period; percentiles come from src/stats/summary.ts.
 */
export async function latencySketches(db: Db, args: ReportScope & { period: Period; now?: Date; cache?: SketchCache }): Promise<Map<string, ModelSketches>> {
  const segments = reportSegments(args.period, args.now ?? new Date());
  const cache = args.cache ?? sketchCacheOf(db);
  const shape = JSON.stringify(["latency", args.tenantId, args.project, args.period]);
  const { rows, pairs } = await readSketchRows<PartRow>(db, cache, shape, (known) => partsSql(segments, args, known));
  const byModel = new Map<string, ModelParts>();
  for (const [i, r] of rows.entries()) {
    let e = byModel.get(r.model_id);
    if (!e) {
      e = { modality: r.modality, provider: r.provider, requests: 0, versions: [], ttfb: [], latency: [], rawTtfb: [], rawLatency: [] };
      byModel.set(r.model_id, e);
    }
    e.requests += Number(r.requests);
    const pair = pairs[i];
    if (pair) {
      e.versions.push(r.v as string);
      e.ttfb.push(pair.ttfb);
      e.latency.push(pair.latency);
    } else {
      if (r.tv !== null) for (const v of r.tv.split(",")) e.rawTtfb.push(Number(v));
      if (r.lv !== null) for (const v of r.lv.split(",")) e.rawLatency.push(Number(v));
    }
  }
  const out = new Map<string, ModelSketches>();
  for (const [model, e] of byModel) {
    const merged = cache.mergedParts(JSON.stringify([shape, model]), e.versions.join(" "), () => ({ ttfb: mergeParts(e.ttfb), latency: mergeParts(e.latency) }));
    out.set(model, {
      modality: e.modality,
      provider: e.provider,
      requests: e.requests,
      ttfb: sketchOfParts([merged.ttfb], e.rawTtfb),
      latency: sketchOfParts([merged.latency], e.rawLatency),
    });
  }
  return out;
}

export async function latencyReport(db: Db, args: ReportScope & { period: Exclude<Period, "all">; now?: Date; cache?: SketchCache }): Promise<LatencyReport> {
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
