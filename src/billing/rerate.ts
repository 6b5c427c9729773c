import { and, asc, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { requests } from "../db/schema/index.js";
import { withRetry } from "../db/errors.js";
import { adjustRollupMoney, rollupSourceColumns } from "../rollups/adjust.js";
import { adjustBillingUsage } from "../rollups/billing-usage.js";
import { rawHorizonWithin } from "../retention/apply.js";
import { DomainError } from "../errors.js";
import { formatMoneyShort, moneyNumber, moneyText, parseMoney } from "../money.js";
import type { Catalog, RateCard, Rating, RatingInput } from "./rate.js";
import { rateRequest } from "./rate.js";

/**
 * Re-rating a window (`voxgate rates rerate`): rule changes never rewrite history on their own;
 * this is the one explicit, reported way to. Dry run by default: it reports what would change.
 * With apply, each batch's changed rows and their hourly rollups are updated in one transaction.
 */

export interface RerateOptions {
  from: Date;
  to: Date;
  tenant?: string | null;
  apply?: boolean;
  batchSize?: number;
  onProgress?: (done: number, total: number) => void;
}

export interface RerateReport {
  from: string;
  to: string;
  tenant: string | null;
  applied: boolean;
  rows: number;
  changed: number;
  /** Rows whose pricing status (priced / unknown / unrated) changes. */
  pricing_changes: number;
  old_rated_total_usd: string;
  new_rated_total_usd: string;
  difference_usd: string;
  /** Changed rows per (old token → new token). */
  by_rule: { from: string | null; to: string | null; rows: number; difference_usd: string }[];
}

type RowSel = Awaited<ReturnType<typeof selectBatch>>[number];

// Money in the report is added as integers of 1e-10 USD (BigInt): no float drift over millions of rows.
const toUnits = parseMoney;
const formatUnits = formatMoneyShort;

function selectBatch(db: Db, where: SQL | undefined, after: { ts: Date; id: string } | null, limit: number) {
  const r = requests;
  return db
    .select({
      id: r.id,
      ts: r.ts,
      tenantId: r.tenantId,
      modality: r.modality,
      modelId: r.modelId,
      provider: r.provider,
      status: r.status,
      costUsd: r.costUsd,
      ratedPriceUsd: r.ratedPriceUsd,
      rateRule: r.rateRule,
      pricing: r.pricing,
      inputTokens: r.inputTokens,
      outputTokens: r.outputTokens,
      cachedInputTokens: r.cachedInputTokens,
      audioSeconds: r.audioSeconds,
      characters: r.characters,
    })
    .from(r)
    .where(and(where, after ? sql`(${r.ts}, ${r.id}) > (${after.ts.toISOString()}::timestamptz, ${after.id}::uuid)` : undefined))
    .orderBy(asc(r.ts), asc(r.id))
    .limit(limit);
}

function toInput(row: RowSel): RatingInput {
  return {
    modality: row.modality as RatingInput["modality"],
    modelId: row.modelId,
    provider: row.provider,
    tenantId: row.tenantId,
    status: row.status as RatingInput["status"],
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    cachedInputTokens: row.cachedInputTokens,
    audioSeconds: row.audioSeconds,
    characters: row.characters,
    // The recorded cost is history: it stays. Only a row with no recorded cost is costed anew.
    costUsd: row.costUsd === null ? null : moneyNumber(row.costUsd),
  };
}

export async function rerateWindow(db: Db, rates: { card: RateCard; catalog: Catalog }, o: RerateOptions): Promise<RerateReport> {
  const r = requests;
  // Retention removed raw rows before its horizon: re-rating there would change only what is left
  // while reporting it as the window's total, so it refuses instead (the rollups keep the old rating).
  const gone = await rawHorizonWithin(db, o.from);
  if (gone) {
    const whose = gone.scope === "*" ? "raw request rows" : `project ${gone.scope}'s raw request rows`;
    throw new DomainError(
      "bad_request",
      `cannot re-rate from ${o.from.toISOString()}: retention removed ${whose} dated before ${gone.before.toISOString()}; re-rate a window starting at or after it`,
      { from: o.from.toISOString(), scope: gone.scope, raw_rows_removed_before: gone.before.toISOString() },
    );
  }
  const where = and(
    sql`${r.ts} >= ${o.from.toISOString()}`,
    sql`${r.ts} < ${o.to.toISOString()}`,
    o.tenant ? sql`${r.tenantId} = ${o.tenant}` : undefined,
  );
  const [{ total } = { total: 0 }] = await db.select({ total: sql<number>`count(*)::int` }).from(r).where(where);
  const batchSize = o.batchSize ?? 5000;
  let oldTotal = 0n;
  let newTotal = 0n;
  let rows = 0;
  let changed = 0;
  let pricingChanges = 0;
  const byRule = new Map<string, { from: string | null; to: string | null; rows: number; diff: bigint }>();
  let after: { ts: Date; id: string } | null = null;
  o.onProgress?.(0, total);
  for (;;) {
    const batch = await selectBatch(db, where, after, batchSize);
    if (batch.length === 0) break;
    const updates: { row: RowSel; rating: Rating }[] = [];
    for (const row of batch) {
      const rating = rateRequest(toInput(row), rates.card, rates.catalog);
      const before = toUnits(row.ratedPriceUsd);
      const now = toUnits(rating.ratedPriceUsd);
      oldTotal += before;
      newTotal += now;
      const costChanged = row.costUsd === null && rating.costUsd !== null;
      const differs =
        before !== now || (row.ratedPriceUsd === null) !== (rating.ratedPriceUsd === null) || row.rateRule !== rating.rateRule || row.pricing !== rating.pricing || costChanged;
      if (!differs) continue;
      changed++;
      if (row.pricing !== rating.pricing) pricingChanges++;
      const key = `${row.rateRule}\u0000${rating.rateRule}`;
      const agg = byRule.get(key) ?? { from: row.rateRule, to: rating.rateRule, rows: 0, diff: 0n };
      agg.rows++;
      agg.diff += now - before;
      byRule.set(key, agg);
      updates.push({ row, rating });
    }
    if (o.apply && updates.length > 0) await applyBatch(db, updates);
    rows += batch.length;
    const last = batch[batch.length - 1] as RowSel;
    after = { ts: last.ts, id: last.id };
    o.onProgress?.(rows, total);
  }
  return {
    from: o.from.toISOString(),
    to: o.to.toISOString(),
    tenant: o.tenant ?? null,
    applied: o.apply === true,
    rows,
    changed,
    pricing_changes: pricingChanges,
    old_rated_total_usd: formatUnits(oldTotal),
    new_rated_total_usd: formatUnits(newTotal),
    difference_usd: formatUnits(newTotal - oldTotal),
    by_rule: [...byRule.values()]
      .sort((a, b) => b.rows - a.rows)
      .map((x) => ({ from: x.from, to: x.to, rows: x.rows, difference_usd: formatUnits(x.diff) })),
  };
}

/** Updates changed rows and moves the same money deltas into every rollup table, atomically. */
async function applyBatch(db: Db, updates: { row: RowSel; rating: Rating }[]): Promise<void> {
  const values = sql.join(
    updates.map(
      ({ row, rating }) =>
        sql`(${row.id}::uuid, ${row.tenantId}::text, ${moneyText(rating.ratedPriceUsd)}::numeric, ${rating.rateRule}::text, ${rating.pricing}::text, ${moneyText(rating.costUsd)}::numeric)`,
    ),
    sql`, `,
  );
  const v = sql`(values ${values}) as v(id, tenant_id, price, rule, pricing, cost)`;
  // A request is its id within its tenant (ids are unique per tenant, not globally).
  const same = sql`r.id = v.id and r.tenant_id is not distinct from v.tenant_id`;
  // Deadlocks with concurrent ingest (rollup rows locked in another order) are retried.
  await withRetry(() =>
    db.transaction(async (tx) => {
      // Rollups first: the deltas are read from the rows as they still are.
      await adjustRollupMoney(
        tx,
        sql`select ${rollupSourceColumns("r")},
                   coalesce(v.price, 0) - coalesce(r.rated_price_usd, 0) as dp,
                   coalesce(v.cost, r.cost_usd, 0) - coalesce(r.cost_usd, 0) as dc
              from requests r join ${v} on ${same}`,
      );
      await adjustBillingUsage(tx, {
        from: sql`from requests r join ${v} on ${same}`,
        newPrice: sql`v.price`,
        newRule: sql`v.rule`,
        newCost: sql`coalesce(r.cost_usd, v.cost)`,
      });
      await tx.execute(sql`
        update requests r set rated_price_usd = v.price, rate_rule = v.rule, pricing = v.pricing,
               cost_usd = coalesce(r.cost_usd, v.cost)
          from ${v} where ${same}`);
    }),
  );
}
