import { typedRequestRow } from "../ingest/records.js";
import type { Logger } from "../logging.js";
import type { EffectiveProject } from "../manage/registry.js";
import type { BudgetDecision, BudgetGate } from "./budget-gate.js";
import type { GatewayRecord } from "./recorder.js";
import type { RateCardStore } from "../billing/rate-card-store.js";

/** Where the store's figure comes from: the local database, or the collector's GET /v1/projects/{id}. */
export type SpendSource = (projectIds: string[]) => Promise<Map<string, number>>;

interface LocalSpend {
  project: string;
  cost: number;
  /** When the record's batch was committed (undefined while queued). */
  committedAt?: number;
}

/**
 * Project budgets from memory. The deciding spend is the store's today_spend (the figure
 * GET /v1/projects/{id} reports: provider cost over the rolling 24 h, all tenants), refreshed every
 * gateway.refresh_interval_ms, plus what this replica recorded that the last refresh could not have
 * seen: records still queued and records committed after that refresh's query started. Each record's
 * cost is rated exactly as ingest will store it (same function, same card), so the two never drift.
 *
 * Overshoot bound: a replica sees another replica's spend only after that one's records are written
 * (≤ 200 ms) and its own next refresh (≤ refresh interval), so across N replicas a budget can be passed
 * by at most (other replicas' spend rate × (refresh interval + flush interval)) plus the cost of the
 * calls already in flight when it tripped (their cost is known only when they end).
 */
export class BudgetTracker implements BudgetGate {
  private storeSpend = new Map<string, number>();
  private local: LocalSpend[] = [];
  private readonly pending = new Map<string, LocalSpend>();
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;

  constructor(
    private readonly source: SpendSource,
    private readonly projects: () => ReadonlyMap<string, EffectiveProject>,
    private readonly rateCard: RateCardStore,
    private readonly log: Logger,
  ) {}

  start(intervalMs: number): Promise<void> {
    this.timer = setInterval(() => void this.refresh(), intervalMs);
    this.timer.unref();
    return this.refresh();
  }

  private budgeted(): string[] {
    const out: string[] = [];
    for (const p of this.projects().values()) if (p.dailyBudget !== null) out.push(p.id);
    return out;
  }

  refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      const ids = this.budgeted();
      if (ids.length === 0) return;
      const startedAt = Date.now();
      try {
        this.storeSpend = await this.source(ids);
        // What the query saw is in storeSpend now: keep only what it could not have seen.
        this.local = this.local.filter((e) => e.committedAt === undefined || e.committedAt >= startedAt);
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, "project spend refresh failed; budgets use the last figure");
      }
    })().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  spend(projectId: string): number {
    let total = this.storeSpend.get(projectId) ?? 0;
    for (const e of this.local) if (e.project === projectId) total += e.cost;
    return total;
  }

  unwritten(projectId: string): number {
    let total = 0;
    for (const e of this.pending.values()) if (e.project === projectId) total += e.cost;
    return total;
  }

  unwrittenProjects(): Iterable<string> {
    return new Set([...this.pending.values()].map((e) => e.project));
  }

  decide(project: EffectiveProject | undefined): BudgetDecision {
    if (!project || project.dailyBudget === null) return "ok";
    if (this.spend(project.id) < project.dailyBudget) return "ok";
    if (project.budgetAction === "block") return "block";
    if (project.budgetAction === "throttle" && project.throttleStack) return "throttle";
    return "warn";
  }

  queued(rec: GatewayRecord): void {
    const project = rec.record.project ?? "default";
    if (this.projects().get(project)?.dailyBudget == null) return;
    const { card, catalog } = this.rateCard.snapshot();
    const checked = typedRequestRow(rec.record, rec.tenantId, card, catalog);
    const cost = checked.ok && checked.row.cost_usd != null ? Number(checked.row.cost_usd) : 0;
    if (cost === 0) return;
    const entry: LocalSpend = { project, cost };
    this.local.push(entry);
    this.pending.set(rec.record.id, entry);
  }

  written(batch: readonly GatewayRecord[], committedAt: number): void {
    for (const r of batch) {
      const e = this.pending.get(r.record.id);
      if (!e) continue;
      e.committedAt = committedAt;
      this.pending.delete(r.record.id);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.refreshing;
  }
}
