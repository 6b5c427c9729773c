import { type SQL, sql } from "drizzle-orm";
import { type Db, queryRows } from "../db/client.js";
import { type DayPartition, listDayPartitions, PARTITIONED_TABLES } from "../db/partitions.js";
import { partitionsBefore } from "./drop.js";
import type { RetentionHorizons } from "./horizons.js";
import { projectCondition, RETENTION_TABLES, type RetentionTable } from "./tables.js";

/** What a retention run would remove (`voxgate retention plan`): nothing is written. */
export interface RetentionPlan {
  now: string;
  horizons: { raw: string | null; rollup: string | null; audit: string | null; projects: { project: string; before: string }[] };
  tables: PlannedTable[];
  projects: { project: string; before: string; tables: { table: string; rows: number; bytes: number }[] }[];
  total_rows: number;
  total_bytes: number;
}

export interface PlannedTable {
  table: string;
  class: string;
  before: string | null;
  rows: number;
  /** Estimated: the rows times the table's average size per row (heap, indexes and TOAST). */
  bytes: number;
  /**
   * Per UTC day: a day partition dropped whole (its exact rows, its bytes), or rows deleted in batches
   * (`partition` "default" for a partitioned table's default partition, absent for a plain table).
   */
  days: { day: string; rows: number; bytes: number; partition?: string }[];
}

/** Average bytes per row of a table, indexes and TOAST included (0 for an empty table). */
async function bytesPerRow(db: Db, table: string): Promise<number> {
  const [row] = await queryRows<{ size: string; rows: string }>(
    db,
    // The planner's row estimate when the table was ever analyzed; counted otherwise (small tables).
    // Summed over a partitioned table's partitions (a plain table is its own partition tree).
    sql`SELECT sum(pg_total_relation_size(c.oid))::text AS size,
        (CASE WHEN bool_and(c.reltuples >= 0) AND sum(c.reltuples) > 0 THEN sum(c.reltuples)::bigint ELSE (SELECT count(*) FROM ${sql.raw(table)}) END)::text AS rows
      FROM pg_partition_tree(${table}::regclass) pt JOIN pg_class c ON c.oid = pt.relid WHERE pt.isleaf`,
  );
  const n = Number(row?.rows ?? 0);
  return n > 0 ? Number(row?.size ?? 0) / n : 0;
}

/** Rows of `t` (or of `from`, one partition of it) matching `where`, per UTC day. */
async function perDay(db: Db, t: RetentionTable, where: SQL, from = t.table): Promise<{ day: string; rows: number }[]> {
  const rows = await queryRows<{ day: Date | string; rows: number }>(
    db,
    sql`SELECT ${t.day} AS day, count(*)::int AS rows FROM ${sql.raw(`"${from}"`)} WHERE ${where} GROUP BY 1 ORDER BY 1`,
  );
  return rows.map((r) => ({ day: new Date(r.day).toISOString().slice(0, 10), rows: Number(r.rows) }));
}

/** Day partitions as the plan lists them: exact rows (counted on the partition alone) and total bytes. */
async function wholeDays(db: Db, parts: readonly DayPartition[]): Promise<PlannedTable["days"]> {
  const out: PlannedTable["days"] = [];
  for (const p of parts) {
    const [r] = await queryRows<{ rows: number; bytes: string }>(
      db,
      sql`SELECT (SELECT count(*)::int FROM ${sql.raw(`"${p.name}"`)}) AS rows, pg_total_relation_size(${p.name}::regclass)::text AS bytes`,
    );
    out.push({ day: new Date(p.dayMs ?? 0).toISOString().slice(0, 10), rows: Number(r?.rows ?? 0), bytes: Number(r?.bytes ?? 0), partition: p.name });
  }
  return out;
}

export async function planRetention(db: Db, h: RetentionHorizons): Promise<RetentionPlan> {
  const tables: PlannedTable[] = [];
  const projects: RetentionPlan["projects"] = h.projects.map((p) => ({ project: p.project, before: p.before.toISOString(), tables: [] }));
  const partitions = await listDayPartitions(db);
  for (const t of RETENTION_TABLES) {
    const before = h.byClass[t.class];
    const partitioned = PARTITIONED_TABLES.some((p) => p.table === t.table);
    // A partitioned table: its whole days past the horizon, then what its default partition holds past it.
    const whole = before === null || !partitioned ? [] : await wholeDays(db, partitionsBefore(partitions, t.table, before));
    const days = before === null ? [] : await perDay(db, t, t.older(before), partitioned ? `${t.table}_default` : t.table);
    const per = days.length > 0 || t.class === "raw" ? await bytesPerRow(db, t.table) : 0;
    const batched = days.map((d) => ({ ...d, bytes: Math.round(d.rows * per), ...(partitioned ? { partition: "default" } : {}) }));
    const all = [...whole, ...batched].sort((a, b) => a.day.localeCompare(b.day));
    tables.push({
      table: t.table,
      class: t.class,
      before: before?.toISOString() ?? null,
      rows: all.reduce((a, d) => a + d.rows, 0),
      bytes: all.reduce((a, d) => a + d.bytes, 0),
      days: all,
    });
    if (t.class !== "raw") continue;
    for (const [i, p] of h.projects.entries()) {
      const cond = projectCondition(t.table, p.project);
      if (cond === null) continue;
      // Rows the global horizon removes anyway are counted there, not here.
      const where = before === null ? sql`${t.older(p.before)} AND ${cond}` : sql`${t.older(p.before)} AND NOT (${t.older(before)}) AND ${cond}`;
      const [c] = await queryRows<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM ${sql.raw(t.table)} WHERE ${where}`);
      const n = Number(c?.n ?? 0);
      projects[i]?.tables.push({ table: t.table, rows: n, bytes: Math.round(n * per) });
    }
  }
  const projectRows = projects.flatMap((p) => p.tables);
  return {
    now: h.now.toISOString(),
    horizons: {
      raw: h.byClass.raw?.toISOString() ?? null,
      rollup: h.byClass.rollup?.toISOString() ?? null,
      audit: h.byClass.audit?.toISOString() ?? null,
      projects: h.projects.map((p) => ({ project: p.project, before: p.before.toISOString() })),
    },
    tables,
    projects,
    total_rows: tables.reduce((a, t) => a + t.rows, 0) + projectRows.reduce((a, t) => a + t.rows, 0),
    total_bytes: tables.reduce((a, t) => a + t.bytes, 0) + projectRows.reduce((a, t) => a + t.bytes, 0),
  };
}
