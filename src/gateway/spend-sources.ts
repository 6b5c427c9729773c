import type { Db } from "../db/client.js";
import { projectsToday, todayWindow } from "../manage/stats.js";
import type { SpendSource } from "./budget-tracker.js";

/** today_spend from the local store: the query behind GET /v1/projects/{id}, operator scope (all tenants). */
export function storeSpendSource(db: Db): SpendSource {
  return async (projectIds) => {
    const stats = await projectsToday(db, { tenantId: null, projectIds, window: todayWindow() });
    return new Map(projectIds.map((id) => [id, stats.get(id)?.cost_today ?? 0]));
  };
}

/**
 * Sidecar: today_spend as the collector reports it (GET /v1/projects/{id} with the collector key; an
 * operator key sees every tenant's spend, a tenant key its own). A project the collector does not
 * know has spent nothing there.
 */
export function collectorSpendSource(collectorUrl: string, apiKey: string | undefined): SpendSource {
  const base = collectorUrl.replace(/\/+$/, "");
  return async (projectIds) => {
    const out = new Map<string, number>();
    await Promise.all(
      projectIds.map(async (id) => {
        const res = await fetch(`${base}/v1/projects/${encodeURIComponent(id)}`, {
          headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
          signal: AbortSignal.timeout(5_000),
        });
        if (res.status === 404) return void out.set(id, 0);
        if (!res.ok) throw new Error(`collector answered ${res.status} for project ${id}`);
        const body = (await res.json()) as { today_spend?: unknown };
        out.set(id, typeof body.today_spend === "number" ? body.today_spend : 0);
      }),
    );
    return out;
  };
}
