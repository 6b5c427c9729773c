import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";
import type { Logger } from "../logging.js";
import { projectsToday, todayWindow } from "../manage/stats.js";

/** A replica's budget holding lives this long unless renewed (a dead replica's holding lapses after it). */
export const BUDGET_LEASE_TTL_MS = 15_000;
/** How often a replica rewrites its holdings (shrunk to what its running work still holds). */
export const BUDGET_LEASE_RENEW_MS = 2_000;

/** The fleet side of budget reservations: what every replica holds, next to what is recorded. */
export interface FleetBudget {
  /**
   * Grants more to this replica's holding of a project (`granted` takes it) while the project's recorded spend
   * plus every replica's holding (this one's read by `own` under the lock: its holds and its records
   * not yet written) is under `budget`;
   * `granted` runs under the lock, before the holding is written, so the caller's own figure
   * already includes it for the next claim.
   */
  claim(projectId: string, budget: number, own: () => number, granted: () => void): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * Budget holdings shared by the replicas on one Postgres: one row per project and replica
 * (gateway_budget_leases), renewed every BUDGET_LEASE_RENEW_MS to what the replica still holds. A
 * claim takes the project's advisory lock, reads the recorded spend (the same rolling 24 h figure the
 * budget gate uses) and the other replicas' live rows, and grants while their sum plus this replica's
 * holding is under the budget: however many replicas run, the last grant passes the budget by at
 * most its own amount, and each replica has at most one such last grant.
 *
 * One database round trip per claim: streams claim once per increment, ahead of need (never per
 * frame); HTTP calls do not claim here (their holds are this replica's and reach the others through
 * the renewed row).
 */
export class BudgetLeases implements FleetBudget {
  private readonly replicaId = randomUUID();
  private readonly timer: NodeJS.Timeout;
  private readonly written = new Set<string>();
  private renewing: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    /** This replica's holding per project now (holds not yet settled into records). */
    private readonly holdings: () => ReadonlyMap<string, number>,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => void this.renew(), BUDGET_LEASE_RENEW_MS);
    this.timer.unref();
  }

  async claim(projectId: string, budget: number, own: () => number, granted: () => void): Promise<boolean> {
    try {
      return await this.db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`voxgate:budget:${projectId}`}))`);
        // Read before the spend: a record written in between is then counted twice, never missed.
        const mine = own();
        const spend = (await projectsToday(tx as unknown as Db, { tenantId: null, projectIds: [projectId], window: todayWindow() })).get(projectId)?.cost_today ?? 0;
        const [others] = rowsOf<{ usd: string | number }>(
          await tx.execute(sql`SELECT coalesce(sum(amount_usd), 0) AS usd FROM gateway_budget_leases
               WHERE project_id = ${projectId} AND replica_id <> ${this.replicaId} AND expires_at > now()`),
        );
        if (spend + Number(others?.usd ?? 0) + mine >= budget) return false;
        granted();
        await this.write(tx as unknown as Db, projectId, own());
        return true;
      });
    } catch (err) {
      // The store is unreachable: fail closed (a block budget is the operator's promise).
      this.log.warn({ err: (err as Error).message, project: projectId }, "budget could not be reserved");
      return false;
    }
  }

  private async write(db: Db, projectId: string, usd: number): Promise<void> {
    this.written.add(projectId);
    await db.execute(sql`INSERT INTO gateway_budget_leases (project_id, replica_id, amount_usd, expires_at)
                         VALUES (${projectId}, ${this.replicaId}, ${usd}, now() + ${`${BUDGET_LEASE_TTL_MS} milliseconds`}::interval)
                         ON CONFLICT (project_id, replica_id) DO UPDATE SET amount_usd = excluded.amount_usd, expires_at = excluded.expires_at`);
  }

  /** Rewrites this replica's rows to what it holds now; a project it no longer holds anything for loses its row. */
  renew(): Promise<void> {
    this.renewing ??= (async () => {
      const now = this.holdings();
      for (const projectId of new Set([...this.written, ...now.keys()])) {
        const usd = now.get(projectId) ?? 0;
        try {
          if (usd > 0) await this.write(this.db, projectId, usd);
          else {
            this.written.delete(projectId);
            await this.db.execute(sql`DELETE FROM gateway_budget_leases WHERE project_id = ${projectId} AND replica_id = ${this.replicaId}`);
          }
        } catch (err) {
          this.log.warn({ err: (err as Error).message, project: projectId }, "budget holding could not be renewed");
        }
      }
    })().finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.renewing;
    if (this.written.size === 0) return;
    await this.db.execute(sql`DELETE FROM gateway_budget_leases WHERE replica_id = ${this.replicaId}`).catch(() => {});
  }
}
