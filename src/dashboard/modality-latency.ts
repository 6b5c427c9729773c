import type { Db } from "../db/client.js";
import { latencySketches } from "../reports/latency.js";
import type { ReportScope } from "../reports/sources.js";
import type { Period } from "../reports/window.js";
import { emptySketch, mergeSketch, summarize } from "../stats/summary.js";
import type { ModalityLatency, ModalityLatencyReport } from "./schemas.js";

/** GET /api/latency/modalities: p50/p95 per modality (models' sketches merged), probes excluded; types from src/dashboard/schemas.ts. */
export type { ModalityLatency, ModalityLatencyReport } from "./schemas.js";

export async function modalityLatency(db: Db, args: ReportScope & { period: Exclude<Period, "all"> }): Promise<ModalityLatencyReport> {
  const byModel = await latencySketches(db, args);
  const merged = new Map<string, { requests: number; ttfb: ReturnType<typeof emptySketch>; latency: ReturnType<typeof emptySketch> }>();
  for (const s of byModel.values()) {
    let m = merged.get(s.modality);
    if (!m) {
      m = { requests: 0, ttfb: emptySketch(), latency: emptySketch() };
      merged.set(s.modality, m);
    }
    m.requests += s.requests;
    mergeSketch(m.ttfb, s.ttfb);
    mergeSketch(m.latency, s.latency);
  }
  const modalities: Record<string, ModalityLatency> = {};
  for (const [modality, m] of [...merged.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const t = summarize(m.ttfb);
    const l = summarize(m.latency);
    modalities[modality] = { requests: m.requests, p50_ttfb_ms: t?.p50 ?? null, p95_ttfb_ms: t?.p95 ?? null, p95_total_latency_ms: l?.p95 ?? null };
  }
  return { period: args.period, project: args.project, modalities };
}
