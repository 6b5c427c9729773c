import { sql } from "drizzle-orm";
import { type Db, queryRows } from "./client.js";

/**
 * The day-partitioned raw tables (migration 0027_day_partitions): PARTITION BY RANGE on one time
 * column, one partition per UTC day named `<table>_pYYYYMMDD`, plus `<table>_default` for rows of a
 * day without a partition (a write never fails). The column's unit: a timestamptz, or epoch ms / s.
 */
export type PartitionUnit = "ts" | "ms" | "s";

export interface PartitionedTable {
  table: string;
  column: string;
  unit: PartitionUnit;
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: "requests", column: "ts", unit: "ts" },
  { table: "turns", column: "caller_speak_start_ms", unit: "ms" },
  { table: "dead_air_events", column: "started_at_ms", unit: "ms" },
  { table: "call_events", column: "created_at_s", unit: "s" },
  { table: "node_samples", column: "ts", unit: "ts" },
];

const DAY_MS = 86_400_000;

/** Days kept ready past today, so a replica down for a while (or a clock a little ahead) still writes to one. */
export const DAYS_AHEAD = 3;

export const dayStart = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

export function partitionName(table: string, dayMs: number): string {
  return `${table}_p${new Date(dayMs).toISOString().slice(0, 10).replaceAll("-", "")}`;
}

/** A UTC instant as the column's value, as SQL text (a constant of the column's type). */
export function boundSql(unit: PartitionUnit, ms: number): string {
  if (unit === "ts") return `'${new Date(ms).toISOString()}'::timestamptz`;
  return unit === "ms" ? String(ms) : String(Math.floor(ms / 1000));
}

export interface DayPartition {
  table: string;
  name: string;
  /** The UTC midnight the partition starts at; null for the default partition. */
  dayMs: number | null;
}

/** The partitions of the partitioned tables, from the catalog (pg_inherits), oldest day first. */
export async function listDayPartitions(db: Db): Promise<DayPartition[]> {
  const names = sql.join(
    PARTITIONED_TABLES.map((t) => sql`${t.table}`),
    sql`, `,
  );
  const rows = await queryRows<{ parent: string; child: string }>(
    db,
    sql`SELECT p.relname AS parent, c.relname AS child FROM pg_inherits i
          JOIN pg_class p ON p.oid = i.inhparent JOIN pg_class c ON c.oid = i.inhrelid
          JOIN pg_namespace n ON n.oid = p.relnamespace
        WHERE n.nspname = current_schema() AND p.relname IN (${names}) AND p.relkind = 'p'`,
  );
  const out: DayPartition[] = [];
  for (const r of rows) {
    const m = /_p(\d{4})(\d{2})(\d{2})$/.exec(r.child);
    const dayMs = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : null;
    // Only our own naming counts as a day; anything else attached by hand is left alone.
    if (dayMs === null && r.child !== `${r.parent}_default`) continue;
    out.push({ table: r.parent, name: r.child, dayMs });
  }
  return out.sort((a, b) => a.table.localeCompare(b.table) || (a.dayMs ?? -1) - (b.dayMs ?? -1));
}

/** The DDL of one day partition (idempotent): what the server runs ahead, and a bulk load runs for a span at once. */
export function createPartitionSql(t: PartitionedTable, dayMs: number): string {
  return `CREATE TABLE IF NOT EXISTS "${partitionName(t.table, dayMs)}" PARTITION OF "${t.table}" FOR VALUES FROM (${boundSql(t.unit, dayMs)}) TO (${boundSql(t.unit, dayMs + DAY_MS)})`;
}

export interface EnsureResult {
  created: string[];
  /** Days left to the default partition: it holds rows of that day already, or the lock was busy. */
  skipped: { name: string; reason: string }[];
}

/**
 * Creates the missing day partitions from `from`'s day to `to`'s day (inclusive), every partitioned
 * table. Each CREATE is its own short transaction under a lock timeout (it locks the parent and scans
 * the default partition), so a busy table is skipped for this turn rather than queued behind; a day
 * whose rows already sit in the default partition cannot get a partition and is skipped (retention
 * deletes those rows in batches). Another replica creating the same day meanwhile is harmless.
 */
export async function ensureDayPartitions(db: Db, from: Date, to: Date, lockTimeoutMs = 2000): Promise<EnsureResult> {
  const existing = new Set((await listDayPartitions(db)).map((p) => p.name));
  const result: EnsureResult = { created: [], skipped: [] };
  for (const t of PARTITIONED_TABLES) {
    for (let day = dayStart(from.getTime()); day <= dayStart(to.getTime()); day += DAY_MS) {
      const name = partitionName(t.table, day);
      if (existing.has(name)) continue;
      try {
        await db.transaction(async (tx) => {
          await tx.execute(sql.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`));
          await tx.execute(sql.raw(createPartitionSql(t, day)));
        });
        result.created.push(name);
      } catch (err) {
        result.skipped.push({ name, reason: err instanceof Error ? err.message : String(err) });
      }
    }
  }
  return result;
}

/** Yesterday to DAYS_AHEAD days ahead: what start-up and every retention run keep ready. */
export function aheadWindow(now = new Date()): { from: Date; to: Date } {
  const today = dayStart(now.getTime());
  return { from: new Date(today - DAY_MS), to: new Date(today + DAYS_AHEAD * DAY_MS) };
}
