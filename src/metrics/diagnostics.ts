import { and, desc, eq, exists, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { diagGates, diagRuns } from "../db/schema/index.js";

/** The ordered gate ladder: PASS < WARN < UNKNOWN < FAIL. Anything else is unrecognised. */
export const DIAG_STATUSES = ["PASS", "WARN", "UNKNOWN", "FAIL"] as const;
export type DiagStatus = (typeof DIAG_STATUSES)[number];

export function recognisedStatus(s: string): DiagStatus | null {
  const up = s.trim().toUpperCase();
  return (DIAG_STATUSES as readonly string[]).includes(up) ? (up as DiagStatus) : null;
}

export interface DiagSnapshot {
  verdict: DiagStatus | null;
  finishedAt: Date;
  /** Gates per (gate id, status), unrecognised statuses dropped. */
  gates: { gateId: string; status: DiagStatus; count: number }[];
}

/**
 * The newest diagnostics run that gated anything (has at least one gate row), in the caller's
 * tenant scope. null with no such run or no readable diagnostics table: the series are then absent.
 */
export async function latestGatedRun(db: Db, scope: TenantScope): Promise<DiagSnapshot | null> {
  try {
    const [run] = await db
      .select({ id: diagRuns.id, verdict: diagRuns.verdict, finishedAt: diagRuns.finishedAt })
      .from(diagRuns)
      .where(and(exists(db.select({ one: sql`1` }).from(diagGates).where(eq(diagGates.runId, diagRuns.id))), tenantCondition(diagRuns.tenantId, scope)))
      .orderBy(desc(diagRuns.finishedAt), desc(diagRuns.id))
      .limit(1);
    if (!run) return null;
    const gateRows = await db
      .select({ gateId: diagGates.gateId, status: diagGates.status, count: sql<number>`count(*)::int` })
      .from(diagGates)
      .where(eq(diagGates.runId, run.id))
      .groupBy(diagGates.gateId, diagGates.status);
    const merged = new Map<string, { gateId: string; status: DiagStatus; count: number }>();
    for (const g of gateRows) {
      const status = recognisedStatus(g.status);
      if (!status) continue;
      const key = JSON.stringify([g.gateId, status]);
      const prev = merged.get(key);
      if (prev) prev.count += Number(g.count);
      else merged.set(key, { gateId: g.gateId, status, count: Number(g.count) });
    }
    return { verdict: recognisedStatus(run.verdict), finishedAt: run.finishedAt, gates: [...merged.values()] };
  } catch {
    return null;
  }
}
