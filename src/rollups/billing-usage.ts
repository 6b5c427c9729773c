import { type Placeholder, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { formatMoney, parseMoney } from "../money.js";
import type { RequestRow } from "../db/schema/requests.js";
import { DAY_MS, floorTo } from "./buckets.js";
import type { RequestProjection } from "./projection.js";

/**
 * The billing usage rollup (src/db/schema/billing-usage.ts): per UTC day, tenant, modality, model and
 * rate rule, the sums GET /v1/billing/usage reports. Ingest folds each stored batch in (a projection:
 * the last upsert of its fold statement, billingUsageProjection), re-rating moves rows between rules (adjustBillingUsage),
 * and the bulk rebuild recomputes it from raw rows (rebuildBillingUsage).
 */

export const BILLING_USAGE_TABLE = "billing_usage_daily";
const KEY = ["bucket", "tenant_id", "modality", "model_id", "rate_rule"] as const;
const KEY_LIST = KEY.join(", ");
const SUMS = ["requests", "rated_price_usd", "cost_usd", "unpriced", "uncosted", "input_units", "output_units"] as const;

interface Acc {
  bucket: string;
  tenant_id: string | null;
  modality: string;
  model_id: string;
  rate_rule: string | null;
  requests: number;
  price: bigint;
  cost: bigint;
  unpriced: number;
  uncosted: number;
  input: number;
  output: number;
}

/** A batch's rows for the upsert, as JSON, sorted by key (the lock order every writer follows). */
export function billingUsageRows(rows: RequestRow[]): string {
  const byKey = new Map<string, Acc>();
  // A batch is mostly runs of one key (one day, tenant, model and rule): a row keyed like the one
  // before joins its accumulator without building the bucket text and key string again.
  let prev: { row: RequestRow; dayMs: number; acc: Acc } | null = null;
  for (const row of rows) {
    const ts = row.ts instanceof Date ? row.ts.getTime() : new Date(row.ts).getTime();
    const dayMs = floorTo(ts, DAY_MS);
    const tenant = row.tenant_id ?? null;
    const rule = row.rate_rule ?? null;
    let acc: Acc | undefined;
    if (
      prev !== null &&
      prev.dayMs === dayMs &&
      (prev.row.tenant_id ?? null) === tenant &&
      prev.row.modality === row.modality &&
      prev.row.model_id === row.model_id &&
      (prev.row.rate_rule ?? null) === rule
    ) {
      acc = prev.acc;
    } else {
      // The bucket as zero-padded epoch ms sorts as its ISO text does; the text is made once per key.
      const key = `${String(dayMs).padStart(15, "0")}\u0000${tenant === null ? "" : `=${tenant}`}\u0000${row.modality}\u0000${row.model_id}\u0000${rule === null ? "" : `=${rule}`}`;
      acc = byKey.get(key);
      if (!acc) {
        acc = { bucket: new Date(dayMs).toISOString(), tenant_id: tenant, modality: row.modality, model_id: row.model_id, rate_rule: rule, requests: 0, price: 0n, cost: 0n, unpriced: 0, uncosted: 0, input: 0, output: 0 };
        byKey.set(key, acc);
      }
      prev = { row, dayMs, acc };
    }
    acc.requests += 1;
    if (row.rated_price_usd === null || row.rated_price_usd === undefined) acc.unpriced += 1;
    else acc.price += parseMoney(row.rated_price_usd);
    if (row.cost_usd === null || row.cost_usd === undefined) acc.uncosted += 1;
    else acc.cost += parseMoney(row.cost_usd);
    acc.input += row.input_units ?? 0;
    acc.output += row.output_units ?? 0;
  }
  const sorted = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, a]) => a);
  return JSON.stringify(
    sorted.map((a) => ({
      bucket: a.bucket,
      tenant_id: a.tenant_id,
      modality: a.modality,
      model_id: a.model_id,
      rate_rule: a.rate_rule,
      requests: a.requests,
      rated_price_usd: formatMoney(a.price),
      cost_usd: formatMoney(a.cost),
      unpriced: a.unpriced,
      uncosted: a.uncosted,
      input_units: a.input,
      output_units: a.output,
    })),
  );
}

/** The billing usage projection (src/rollups/projection.ts): one upsert of the fold statement, keys in sorted order. */
export const billingUsageProjection: RequestProjection = {
  name: "billing usage",
  fold: {
    upserts: () => [{ name: BILLING_USAGE_TABLE, sql: billingUsageUpsert(sql.placeholder(BILLING_USAGE_TABLE)) }],
    rows: (rows) => ({ values: { [BILLING_USAGE_TABLE]: billingUsageRows(rows) } }),
  },
};

const TYPES =
  "bucket timestamptz, tenant_id text, modality text, model_id text, rate_rule text, requests bigint, rated_price_usd numeric, cost_usd numeric, unpriced bigint, uncosted bigint, input_units numeric, output_units numeric";

/** The upsert of billingUsageRows' JSON (a CTE of the rollup statement): sums added to the stored row. */
export function billingUsageUpsert(rowsJson: Placeholder | SQL): SQL {
  const t = BILLING_USAGE_TABLE;
  const head = sql.raw(`INSERT INTO ${t} (${KEY_LIST}, ${SUMS.join(", ")}) SELECT ${KEY_LIST}, ${SUMS.join(", ")} FROM json_to_recordset`);
  const tail = sql.raw(`AS v(${TYPES}) ON CONFLICT (${KEY_LIST}) DO UPDATE SET ${SUMS.map((c) => `${c} = ${t}.${c} + excluded.${c}`).join(", ")}`);
  return sql`${head}(${rowsJson}::json) ${tail}`;
}

/** The sums of raw request rows `alias`, grouped by the key (a select list; group by 1-5). */
function rawSums(alias: string): string {
  const a = alias;
  return `date_trunc('day', ${a}.ts, 'UTC') AS bucket, ${a}.tenant_id, ${a}.modality, ${a}.model_id, ${a}.rate_rule,
    count(*) AS requests, coalesce(sum(${a}.rated_price_usd), 0) AS rated_price_usd, coalesce(sum(${a}.cost_usd), 0) AS cost_usd,
    count(*) FILTER (WHERE ${a}.rated_price_usd IS NULL) AS unpriced, count(*) FILTER (WHERE ${a}.cost_usd IS NULL) AS uncosted,
    coalesce(sum(${a}.input_units::numeric), 0) AS input_units, coalesce(sum(${a}.output_units::numeric), 0) AS output_units`;
}

/** Rebuilds the rollup for whole UTC days [from, to) from raw rows (bulk loads and repair). */
export async function rebuildBillingUsage(db: Db, from: Date, to: Date): Promise<void> {
  const f = from.toISOString();
  const e = to.toISOString();
  await db.execute(sql`DELETE FROM ${sql.raw(BILLING_USAGE_TABLE)} WHERE bucket >= ${f}::timestamptz AND bucket < ${e}::timestamptz`);
  await db.execute(
    sql`INSERT INTO ${sql.raw(`${BILLING_USAGE_TABLE} (${KEY_LIST}, ${SUMS.join(", ")})`)}
      SELECT ${sql.raw(rawSums("r"))} FROM requests r WHERE r.ts >= ${f}::timestamptz AND r.ts < ${e}::timestamptz GROUP BY 1, 2, 3, 4, 5`,
  );
}

/**
 * Re-rating changed rows' price, rule, pricing or cost: each row's old contribution leaves its key and
 * the new one joins its (maybe other) key. `changes` is a SELECT of the request columns (alias r:
 * ts, tenant_id, modality, model_id, rate_rule, rated_price_usd, cost_usd, input_units, output_units)
 * with the new `price`, `rule` and `cost` (alias v). Run it in the transaction that updates the rows,
 * before they change. Keys left with no request are removed (their rule no longer rated anything).
 */
export async function adjustBillingUsage(tx: Db, changes: { from: SQL; newPrice: SQL; newRule: SQL; newCost: SQL }): Promise<void> {
  const t = sql.raw(BILLING_USAGE_TABLE);
  await tx.execute(sql`
    INSERT INTO ${t} (${sql.raw(KEY_LIST)}, ${sql.raw(SUMS.join(", "))})
    SELECT ${sql.raw(KEY_LIST)}, sum(requests), sum(rated_price_usd), sum(cost_usd), sum(unpriced), sum(uncosted), sum(input_units), sum(output_units)
    FROM (
      SELECT date_trunc('day', r.ts, 'UTC') AS bucket, r.tenant_id, r.modality, r.model_id, r.rate_rule,
        -1 AS requests, -coalesce(r.rated_price_usd, 0) AS rated_price_usd, -coalesce(r.cost_usd, 0) AS cost_usd,
        -(r.rated_price_usd IS NULL)::int AS unpriced, -(r.cost_usd IS NULL)::int AS uncosted,
        -coalesce(r.input_units::numeric, 0) AS input_units, -coalesce(r.output_units::numeric, 0) AS output_units
      ${changes.from}
      UNION ALL
      SELECT date_trunc('day', r.ts, 'UTC'), r.tenant_id, r.modality, r.model_id, ${changes.newRule},
        1, coalesce(${changes.newPrice}, 0), coalesce(${changes.newCost}, 0),
        (${changes.newPrice} IS NULL)::int, (${changes.newCost} IS NULL)::int,
        coalesce(r.input_units::numeric, 0), coalesce(r.output_units::numeric, 0)
      ${changes.from}
    ) d GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (${sql.raw(KEY_LIST)}) DO UPDATE SET ${sql.raw(SUMS.map((c) => `${c} = ${BILLING_USAGE_TABLE}.${c} + excluded.${c}`).join(", "))}`);
  await tx.execute(sql`DELETE FROM ${t} WHERE requests = 0 AND bucket IN (SELECT date_trunc('day', r.ts, 'UTC') ${changes.from})`);
}
