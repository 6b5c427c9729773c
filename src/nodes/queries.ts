import { and, desc, eq, gte, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { nodeSamples } from "../db/schema/index.js";

export type NodeSampleInsert = typeof nodeSamples.$inferInsert;

/** Rows per INSERT statement (well under Postgres' 65535 parameters at 6 columns a row). */
const INSERT_CHUNK = 1000;

export async function insertNodeSamples(db: Db, rows: NodeSampleInsert[]): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    await db.insert(nodeSamples).values(rows.slice(i, i + INSERT_CHUNK));
  }
}

/** Drops samples older than `before` (retention). */
export async function pruneNodeSamples(db: Db, before: Date): Promise<void> {
  await db.delete(nodeSamples).where(lt(nodeSamples.ts, before));
}

/** Per node and source: the last scrape time and its `up` value. */
export async function listNodes(db: Db) {
  const rows = await db
    .selectDistinctOn([nodeSamples.node, nodeSamples.source], {
      node: nodeSamples.node,
      source: nodeSamples.source,
      ts: nodeSamples.ts,
      value: nodeSamples.value,
    })
    .from(nodeSamples)
    .where(eq(nodeSamples.metric, "up"))
    .orderBy(nodeSamples.node, nodeSamples.source, desc(nodeSamples.ts));
  const byNode = new Map<string, Record<string, { up: number; last_scrape_at: string }>>();
  for (const r of rows) {
    const sources = byNode.get(r.node) ?? {};
    sources[r.source] = { up: r.value, last_scrape_at: r.ts.toISOString() };
    byNode.set(r.node, sources);
  }
  return [...byNode.entries()].map(([node, sources]) => ({ node, sources }));
}

export async function listNodeSamples(db: Db, a: { node: string; metric?: string; since?: Date; limit: number }) {
  const rows = await db
    .select()
    .from(nodeSamples)
    .where(
      and(
        eq(nodeSamples.node, a.node),
        a.metric === undefined ? undefined : eq(nodeSamples.metric, a.metric),
        a.since === undefined ? undefined : gte(nodeSamples.ts, a.since),
      ),
    )
    .orderBy(desc(nodeSamples.ts), sql`${nodeSamples.id} desc`)
    .limit(a.limit);
  return rows.map((r) => ({
    ts: r.ts.toISOString(),
    source: r.source,
    metric: r.metric,
    labels: r.labels ?? {},
    value: r.value,
  }));
}
