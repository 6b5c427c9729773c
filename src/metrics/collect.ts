import type { TenantScope } from "../auth/context.js";
import type { AuthFailures } from "../auth/failures.js";
import type { ReadStore } from "../db/client.js";
import { type ConfigStore, listEffectiveProviders } from "../manage/registry.js";
import { costReport } from "../reports/costs.js";
import { latencySketches } from "../reports/latency.js";
import { emptySketch, mergeSketch, quantile } from "../stats/summary.js";
import { otlpState, type OtlpState } from "../otlp/receive.js";
import { latestGatedRun } from "./diagnostics.js";
import { lastRetentionRun, type TableSizes } from "../retention/stats.js";
import { type MetricFamily, type MetricSample, renderExposition } from "./exposition.js";

/** Quantiles published for the latency summaries. */
export const METRIC_QUANTILES = [0.5, 0.9, 0.95, 0.99] as const;

const sorted = <T>(o: Record<string, T>) => Object.entries(o).sort(([a], [b]) => a.localeCompare(b));

/**
 * GET /v1/metrics: rolling 24 h gauges from the same cost and latency functions as /v1/costs and
 * /v1/latency (period today), plus uptime, configured providers and the newest gated diagnostics run.
 */
/** What /v1/metrics reads besides the store: start time, refused credentials and the gateway recorder's queue. */
export interface MetricsSources extends ConfigStore, ReadStore {
  startedAt: number;
  authFailures: Pick<AuthFailures, "counts">;
  /** The raw tables' rows, bytes and oldest rows (cached by the root: a catalog walk per partition). */
  tableSizes: () => Promise<TableSizes>;
  gateway: {
    recorder: { stats(): { queued: number; dropped: number }; attemptCounts(): ReadonlyMap<string, Readonly<Record<AttemptStatus, number>>> };
    streams: { openPerTenant(): Iterable<[string | null, number]>; failovers(): Iterable<{ route: string; from: string; to: string; count: number }> };
    /** The routing table's projects (budgets) and the budget gate's spend today: what budgets enforce. */
    table: { projects: ReadonlyMap<string, { dailyBudget: number | null; tenantId: string | null }> };
    budgets: { spend(projectId: string): number };
  };
}

type AttemptStatus = "success" | "error" | "fallback";
const ATTEMPT_STATUSES: readonly AttemptStatus[] = ["success", "error", "fallback"];

export async function metricsExposition(deps: MetricsSources, scope: TenantScope, now: Date = new Date()): Promise<string> {
  const db = deps.readDatabase.db;
  const args = { tenantId: scope.tenantId, project: null, period: "today" as const, now };
  const [costs, sketches, providers, diag] = await Promise.all([
    costReport(db, args),
    latencySketches(db, args),
    listEffectiveProviders(deps),
    latestGatedRun(db, scope),
  ]);

  const ttfb = emptySketch();
  const latency = emptySketch();
  const ttfbByModality = new Map<string, typeof ttfb>();
  for (const s of sketches.values()) {
    mergeSketch(ttfb, s.ttfb);
    mergeSketch(latency, s.latency);
    const m = ttfbByModality.get(s.modality) ?? emptySketch();
    ttfbByModality.set(s.modality, m);
    mergeSketch(m, s.ttfb);
  }
  const quantileSamples = (s: typeof ttfb, labels: Record<string, string> = {}): MetricSample[] =>
    s.count === 0 ? [] : METRIC_QUANTILES.map((q) => ({ labels: { ...labels, quantile: String(q) }, value: quantile(s, q) / 1000 }));

  // Configured providers without traffic are a known zero; providers seen in traffic are listed too.
  // A tenant key sees only providers of its own traffic: provider setup is the operator's.
  const operator = scope.tenantId === null;
  const configured = operator ? providers.filter((p) => p.configured) : [];
  const providerLines = { ...Object.fromEntries(configured.map((p) => [p.providerId, { cost: 0, requests: 0 }])), ...costs.by_provider };

  const families: MetricFamily[] = [
    { name: "voxgate_uptime_seconds", help: "Seconds since this Voxgate process started.", type: "gauge", samples: [{ value: (now.getTime() - deps.startedAt) / 1000 }] },
    {
      name: "voxgate_providers_configured",
      help: "Providers with credentials (or self-hosted) in the effective registry (operator keys only).",
      type: "gauge",
      samples: operator ? [{ value: configured.length }] : [],
    },
    {
      name: "voxgate_cost_usd_total",
      help: "Provider cost in USD over the rolling trailing 24 hours (a gauge, not a counter); period=today, and again per provider and per project.",
      type: "gauge",
      samples: [
        { labels: { period: "today" }, value: costs.total },
        ...sorted(providerLines).map(([provider, l]) => ({ labels: { provider }, value: l.cost })),
        ...sorted(costs.by_project).map(([project, l]) => ({ labels: { project }, value: l.cost })),
      ],
    },
    {
      name: "voxgate_requests_total",
      help: "Requests over the rolling trailing 24 hours, per provider (a gauge; no unlabelled total).",
      type: "gauge",
      samples: sorted(providerLines).map(([provider, l]) => ({ labels: { provider }, value: l.requests })),
    },
    { name: "voxgate_request_ttfb_seconds", help: "Time to first byte over the rolling 24 hours, probe traffic excluded.", type: "summary", samples: quantileSamples(ttfb) },
    { name: "voxgate_request_total_latency_seconds", help: "Total request latency over the rolling 24 hours, probe traffic excluded.", type: "summary", samples: quantileSamples(latency) },
    {
      name: "voxgate_request_ttfb_by_modality_seconds",
      help: "Time to first byte over the rolling 24 hours per modality (stt, llm, tts), probe traffic excluded.",
      type: "summary",
      samples: [...ttfbByModality].sort(([a], [b]) => a.localeCompare(b)).flatMap(([modality, sk]) => quantileSamples(sk, { modality })),
    },
    {
      name: "voxgate_project_budget_used_ratio",
      help: "Today's spend over the daily budget, per project with a daily_budget (1 = spent), as the budget gate sees it; a tenant key sees its own projects.",
      type: "gauge",
      samples: budgetRatios(deps.gateway, scope),
    },
  ];
  // Open streams per tenant (never per key): an operator sees every tenant, a tenant key its own.
  const streams = [...deps.gateway.streams.openPerTenant()]
    .filter(([tenant]) => operator || tenant === scope.tenantId)
    .sort(([a], [b]) => (a ?? "").localeCompare(b ?? ""));
  families.push({
    name: "voxgate_gateway_open_streams",
    help: "Gateway WebSocket streams open on this replica, per tenant (no tenant label: keys without a tenant).",
    type: "gauge",
    samples: streams.map(([tenant, n]) => (tenant === null ? { value: n } : { labels: { tenant }, value: n })),
  });
  if (operator) {
    // Operator only: refused credentials are about the whole service, not one tenant's traffic.
    const failures = deps.authFailures.counts();
    families.push({
      name: "voxgate_auth_failures_total",
      help: "Presented API keys that were refused (unknown, revoked, malformed or throttled), per credential kind, since this process started.",
      type: "counter",
      samples: [
        { labels: { credential: "static" }, value: failures.static },
        { labels: { credential: "virtual" }, value: failures.virtual },
      ],
    });
    // Operator only, like the above: the gateway recorder is the whole process's.
    const rec = deps.gateway.recorder.stats();
    families.push(
      {
        name: "voxgate_gateway_records_dropped_total",
        help: "Gateway request records dropped because the in-memory record queue was full (or not written by shutdown), since this process started.",
        type: "counter",
        samples: [{ value: rec.dropped }],
      },
      {
        name: "voxgate_gateway_stream_failovers_total",
        help: "Live STT streams moved to the next vendor mid-stream (the client's socket stayed open), per route and provider pair, since this process started.",
        type: "counter",
        samples: [...deps.gateway.streams.failovers()]
          .sort((a, b) => a.route.localeCompare(b.route) || a.from.localeCompare(b.from) || a.to.localeCompare(b.to))
          .map((f) => ({ labels: { route: f.route, from: f.from, to: f.to }, value: f.count })),
      },
      {
        name: "voxgate_gateway_records_queued",
        help: "Gateway request records waiting to be written.",
        type: "gauge",
        samples: [{ value: rec.queued }],
      },
      {
        name: "voxgate_gateway_attempts_total",
        help: "Gateway attempts recorded, per provider and status (success, error, fallback), since this process started; configured providers start at 0.",
        type: "counter",
        samples: attemptSamples(deps.gateway.recorder.attemptCounts(), configured.map((p) => p.providerId)),
      },
      ...otlpFamilies(otlpState(deps)),
    );
  }
  if (operator) {
    // Operator only: table sizes are the whole database's.
    const [sizes, lastRun] = await Promise.all([deps.tableSizes(), lastRetentionRun(db)]);
    const r = { ...sizes, lastRun };
    families.push(
      {
        name: "voxgate_raw_table_rows",
        help: "Rows of each raw per-call table (the planner's estimate; counted for a partition never analyzed), at most a minute old.",
        type: "gauge",
        samples: r.tables.map((t) => ({ labels: { table: t.table }, value: t.rows })),
      },
      {
        name: "voxgate_raw_table_bytes",
        help: "Bytes of each raw per-call table, indexes and TOAST included, at most a minute old.",
        type: "gauge",
        samples: r.tables.map((t) => ({ labels: { table: t.table }, value: t.bytes })),
      },
      {
        name: "voxgate_retention_oldest_request_timestamp_seconds",
        help: "Timestamp of the oldest request row kept, in Unix seconds (absent when there is none).",
        type: "gauge",
        samples: r.oldestRequest ? [{ value: r.oldestRequest.getTime() / 1000 }] : [],
      },
      {
        name: "voxgate_retention_oldest_partition_timestamp_seconds",
        help: "Start of the oldest day partition of each day-partitioned raw table, in Unix seconds.",
        type: "gauge",
        samples: r.oldestPartitions.map((p) => ({ labels: { table: p.table }, value: p.day.getTime() / 1000 })),
      },
      {
        name: "voxgate_retention_last_run_timestamp_seconds",
        help: "When the last retention run finished, in Unix seconds (absent before the first).",
        type: "gauge",
        samples: r.lastRun ? [{ value: r.lastRun.finishedAt.getTime() / 1000 }] : [],
      },
      {
        name: "voxgate_retention_last_run_duration_seconds",
        help: "How long the last retention run took.",
        type: "gauge",
        samples: r.lastRun ? [{ value: r.lastRun.durationMs / 1000 }] : [],
      },
      {
        name: "voxgate_retention_last_run_deleted_rows",
        help: "Rows the last retention run removed, every table together.",
        type: "gauge",
        samples: r.lastRun ? [{ value: r.lastRun.deleted }] : [],
      },
    );
  }
  if (diag) {
    families.push(
      {
        name: "voxgate_diag_gate_status",
        help: "Gates of the newest diagnostics run that gated anything: number of gates per gate id and status (PASS<WARN<UNKNOWN<FAIL).",
        type: "gauge",
        samples: diag.gates
          .sort((a, b) => a.gateId.localeCompare(b.gateId) || a.status.localeCompare(b.status))
          .map((g) => ({ labels: { gate: g.gateId, status: g.status }, value: g.count })),
      },
      {
        name: "voxgate_diag_run_verdict",
        help: "Stored verdict of that diagnostics run: 1 on the series labelled with the verdict.",
        type: "gauge",
        samples: diag.verdict ? [{ labels: { verdict: diag.verdict }, value: 1 }] : [],
      },
      {
        name: "voxgate_diag_run_timestamp_seconds",
        help: "When that diagnostics run finished, in Unix seconds.",
        type: "gauge",
        samples: [{ value: diag.finishedAt.getTime() / 1000 }],
      },
    );
  }
  return renderExposition(families);
}

/** Budget use per project with a daily budget (a zero budget counts as spent); a tenant key sees only its own projects. */
function budgetRatios(gw: MetricsSources["gateway"], scope: TenantScope): MetricSample[] {
  const out: MetricSample[] = [];
  for (const [project, p] of [...gw.table.projects].sort(([a], [b]) => a.localeCompare(b))) {
    if (p.dailyBudget === null || (scope.tenantId !== null && p.tenantId !== scope.tenantId)) continue;
    const spend = gw.budgets.spend(project);
    out.push({ labels: { project }, value: p.dailyBudget > 0 ? spend / p.dailyBudget : 1 });
  }
  return out;
}

/** Attempts per provider and status, every status of every configured or seen provider (a known zero rates from the start). */
function attemptSamples(counts: ReadonlyMap<string, Readonly<Record<AttemptStatus, number>>>, configured: string[]): MetricSample[] {
  const providers = [...new Set([...configured, ...counts.keys()])].filter((p) => p !== "").sort();
  return providers.flatMap((provider) => ATTEMPT_STATUSES.map((status) => ({ labels: { provider, status }, value: counts.get(provider)?.[status] ?? 0 })));
}

/** The OTLP trace receiver's counters (operator only: the receiver's state is the whole process's). */
function otlpFamilies(state: OtlpState): MetricFamily[] {
  return [
    {
      name: "voxgate_otlp_spans_received_total",
      help: "Spans received on POST /v1/otlp/v1/traces since this process started.",
      type: "counter",
      samples: [{ value: state.spansReceived }],
    },
    {
      name: "voxgate_otlp_spans_rejected_total",
      help: "Spans refused (bad ids or times, or whose record the write path skipped), reported back in partial_success.",
      type: "counter",
      samples: [{ value: state.spansRejected }],
    },
    {
      name: "voxgate_otlp_spans_unmapped_total",
      help: "Spans of a kind Voxgate does not map, dropped, per LiveKit span name (any other name as span=other).",
      type: "counter",
      samples: [...state.spansUnmapped].sort(([a], [b]) => a.localeCompare(b)).map(([span, value]) => ({ labels: { span }, value })),
    },
  ];
}
