import { type SQL, sql } from "drizzle-orm";
import { z } from "zod";
import type { TenantScope } from "../auth/context.js";
import { isoDate } from "../billing/answers.js";
import { type Db, queryRows } from "../db/client.js";
import { moneyNumber } from "../money.js";

/**
 * The cost export: every request record in [from, to) of the caller's tenant, oldest first, as CSV
 * (a header row, one row per record) or one JSON array. Read in keyset pages and written as each
 * page arrives, so a million rows never sit in memory at once, on the server or in `voxgate export-costs`.
 */
export const EXPORT_PAGE_ROWS = 5000;

export const exportQuery = z.object({
  from: isoDate.describe("window start, inclusive: YYYY-MM-DD (UTC midnight) or ISO-8601"),
  to: isoDate.describe("window end, exclusive"),
  format: z.enum(["csv", "json"]).default("csv"),
});
export type ExportQuery = z.output<typeof exportQuery>;

/** The columns, in order: the CSV header and each JSON object's keys. */
export const EXPORT_COLUMNS = [
  "id",
  "ts",
  "tenant_id",
  "project",
  "session_id",
  "room_name",
  "agent_id",
  "modality",
  "model_id",
  "provider",
  "status",
  "is_probe",
  "pricing",
  "cost_usd",
  "rated_price_usd",
  "rate_rule",
  "input_tokens",
  "output_tokens",
  "cached_input_tokens",
  "audio_seconds",
  "characters",
  "ttfb_ms",
  "total_latency_ms",
] as const;

type ExportRow = Record<(typeof EXPORT_COLUMNS)[number], string | number | boolean | null> & { tenant_key: string };
const MONEY = new Set(["cost_usd", "rated_price_usd"]);

async function page(db: Db, scope: TenantScope, q: ExportQuery, after: ExportRow | null): Promise<ExportRow[]> {
  const conditions: SQL[] = [sql`ts >= ${q.from.toISOString()}::timestamptz`, sql`ts < ${q.to.toISOString()}::timestamptz`];
  if (scope.tenantId !== null) conditions.push(sql`tenant_id = ${scope.tenantId}`);
  // (ts, id, tenant) is unique: ids are unique per tenant, and ts is compared at the stored microsecond.
  if (after) {
    conditions.push(
      sql`ts >= ${after.ts}::timestamptz and (ts, id::text, coalesce(tenant_id, '')) > (${after.ts}::timestamptz, ${after.id}, ${after.tenant_key})`,
    );
  }
  return queryRows<ExportRow>(
    db,
    sql`select id::text as id, to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ts, tenant_id, coalesce(tenant_id, '') as tenant_key,
          project, session_id, room_name, agent_id, modality, model_id, provider, status, is_probe, pricing,
          cost_usd::text as cost_usd, rated_price_usd::text as rated_price_usd, rate_rule, input_tokens::float8 as input_tokens,
          output_tokens::float8 as output_tokens, cached_input_tokens::float8 as cached_input_tokens, audio_seconds,
          characters::float8 as characters, ttfb_ms, total_latency_ms
        from requests where ${sql.join(conditions, sql` and `)}
        order by ts, id::text, coalesce(tenant_id, '') limit ${EXPORT_PAGE_ROWS}`,
  );
}

/** The records of the window, page by page (the next page is read when the previous one was taken). */
export async function* exportRows(db: Db, scope: TenantScope, q: ExportQuery): AsyncGenerator<ExportRow[]> {
  let after: ExportRow | null = null;
  for (;;) {
    const rows = await page(db, scope, q, after);
    if (rows.length > 0) yield rows;
    if (rows.length < EXPORT_PAGE_ROWS) return;
    after = rows[rows.length - 1] ?? null;
  }
}

/** A CSV field per RFC 4180 (amounts as stored, exact to 10 decimals): quoted when it holds a comma, quote, CR or LF, or starts with a formula character. */
export function csvField(column: string, v: string | number | boolean | null): string {
  if (v === null) return "";
  const s = String(v);
  // A leading = + - @ makes spreadsheets evaluate the cell: such text (not a number or an amount) gets a ' prefix.
  const guarded = typeof v === "string" && !MONEY.has(column) && /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(guarded) || guarded !== s ? `"${guarded.replaceAll('"', '""')}"` : guarded;
}

function jsonValue(key: string, v: string | number | boolean | null) {
  return MONEY.has(key) && typeof v === "string" ? moneyNumber(v) : v;
}

/** The export as text chunks: CSV lines or the pieces of one JSON array, one chunk per page. */
export async function* exportChunks(db: Db, scope: TenantScope, q: ExportQuery): AsyncGenerator<string> {
  if (q.format === "csv") yield `${EXPORT_COLUMNS.join(",")}\r\n`;
  else yield "[";
  let first = true;
  for await (const rows of exportRows(db, scope, q)) {
    if (q.format === "csv") {
      yield rows.map((r) => `${EXPORT_COLUMNS.map((c) => csvField(c, r[c])).join(",")}\r\n`).join("");
    } else {
      const parts = rows.map((r) => JSON.stringify(Object.fromEntries(EXPORT_COLUMNS.map((c) => [c, jsonValue(c, r[c])]))));
      yield `${first ? "\n" : ",\n"}${parts.join(",\n")}`;
      first = false;
    }
  }
  if (q.format === "json") yield "\n]\n";
}
