import { and, isNotNull, ne } from "drizzle-orm";
import type { RateCardStore } from "../billing/rate-card-store.js";
import type { Config } from "../config/schema.js";
import type { Database } from "../db/client.js";
import { projects } from "../db/schema/index.js";
import type { RequestRow } from "../db/schema/requests.js";
import type { Catalog, RateCard } from "../billing/rate.js";
import { type RecordCheck, toRequestRow, type TypedRecord, typedRequestRow } from "./records.js";
import type { RequestStore, Within } from "./store-requests.js";

/** At most this many skip reasons are listed in one HTTP answer (the count is always exact). */
export const MAX_LISTED_SKIPS = 100;

export interface SkippedRow {
  index: number;
  id: string | null;
  reason: string;
}

/** The answer of POST /v1/ingest, sent only after the transaction committed. */
export interface IngestResult {
  received: number;
  accepted: number;
  duplicates: number;
  skipped: number;
  skipped_records: SkippedRow[];
}

/** What ingest reads: the backdate horizon, the database, the rate card in memory and the request store with its projections. */
export interface IngestDeps {
  config: Pick<Config, "cost_tracking" | "projects">;
  database: Database;
  rateCard: Pick<RateCardStore, "snapshot">;
  requests: RequestStore;
}

/**
 * POST /v1/ingest: validates (untrusted JSON, each record on its own), rates and stores one batch for
 * the caller's tenant (never a body tenant_id). A tenant-bound key may not date records further back
 * than cost_tracking.backdate_horizon_days.
 */
export function ingestRequests(deps: IngestDeps, tenantId: string | null, batch: readonly unknown[]): Promise<IngestResult> {
  return ingest(deps, tenantId, batch, toRequestRow, rawId, MAX_LISTED_SKIPS);
}

/**
 * The typed entry for in-process producers (the gateway's recorder, the OTLP receiver): records built
 * as TypedRecord skip the wire-format parse; each value's rule, the horizon, the foreign-project
 * check, rating and the store are the same as ingestRequests'. Every skipped record is listed (no
 * answer size to bound): a producer attributes each to its own source.
 */
export function ingestRecords(deps: IngestDeps, tenantId: string | null, records: readonly TypedRecord[], within?: Within): Promise<IngestResult> {
  return ingest(deps, tenantId, records, typedRequestRow, (r) => (typeof r.id === "string" ? r.id.slice(0, 64) : null), Number.POSITIVE_INFINITY, within);
}

type ToRow<T> = (input: T, tenantId: string | null, card: RateCard, catalog: Catalog, notBefore: number | null) => RecordCheck;

async function ingest<T>(
  deps: IngestDeps,
  tenantId: string | null,
  batch: readonly T[],
  toRow: ToRow<T>,
  idOf: (input: T) => string | null,
  listAtMost: number,
  within?: Within,
): Promise<IngestResult> {
  const { card, catalog } = deps.rateCard.snapshot();
  const notBefore = tenantId === null ? null : Date.now() - deps.config.cost_tracking.backdate_horizon_days * 86_400_000;
  const skipped: SkippedRow[] = [];
  let skippedCount = 0;
  let duplicates = 0;
  const byId = new Map<string, RequestRow>();
  const foreign = tenantId === null ? null : await projectsOwnedByOthers(deps, tenantId);
  batch.forEach((input, index) => {
    let check = toRow(input, tenantId, card, catalog, notBefore);
    if (check.ok && foreign?.has(check.row.project ?? "default")) check = { ok: false, reason: "project: owned by another tenant" };
    if (!check.ok) {
      skippedCount++;
      if (skipped.length < listAtMost) skipped.push({ index, id: idOf(input), reason: check.reason });
      return;
    }
    // The same id twice in one batch: the first wins, the rest are duplicates.
    if (byId.has(check.row.id)) duplicates++;
    else byId.set(check.row.id, check.row);
  });
  const inserted = await deps.requests.store(deps.database.db, tenantId, [...byId.values()], within);
  duplicates += byId.size - inserted.length;
  return {
    received: batch.length,
    accepted: inserted.length,
    duplicates,
    skipped: skippedCount,
    skipped_records: skipped,
  };
}

/**
 * Projects owned by a tenant other than `tenantId` (yaml `tenant_id` or set through the API): a tenant
 * key's rows naming one are skipped, so it cannot spend another tenant's budget by ingesting.
 */
async function projectsOwnedByOthers(services: Pick<IngestDeps, "config" | "database">, tenantId: string): Promise<Set<string>> {
  const out = new Set<string>();
  for (const [id, p] of Object.entries(services.config.projects)) if (p.tenant_id !== undefined && p.tenant_id !== tenantId) out.add(id);
  const rows = await services.database.db
    .select({ id: projects.projectId })
    .from(projects)
    .where(and(isNotNull(projects.tenantId), ne(projects.tenantId, tenantId)));
  for (const r of rows) if (!services.config.projects[r.id]) out.add(r.id);
  return out;
}

function rawId(raw: unknown): string | null {
  if (raw && typeof raw === "object" && "id" in raw) {
    const id = (raw as { id: unknown }).id;
    if (typeof id === "string") return id.slice(0, 64);
  }
  return null;
}
