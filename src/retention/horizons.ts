import type { Config } from "../config/schema.js";
import { DAY_MS, floorTo } from "../rollups/buckets.js";
import type { RetentionClass } from "./tables.js";

/**
 * The cutoffs a retention run applies, from the configuration and the current time: rows dated
 * before a cutoff go. Cutoffs fall on UTC midnights, so a day (a rollup day, the billing usage
 * day) is either wholly kept or wholly removed. `null`: that class is kept forever (days 0).
 */
export interface RetentionHorizons {
  now: Date;
  byClass: Record<RetentionClass, Date | null>;
  /** Projects whose raw rows have a shorter horizon than the global one. */
  projects: { project: string; before: Date }[];
}

/** The UTC midnight `days` days before the start of today; null when days is 0 (forever). */
export function cutoffFor(days: number, now: Date): Date | null {
  return days > 0 ? new Date(floorTo(now.getTime(), DAY_MS) - days * DAY_MS) : null;
}

export function retentionHorizons(config: Pick<Config, "retention" | "projects">, now = new Date()): RetentionHorizons {
  const r = config.retention;
  const raw = cutoffFor(r.raw_days, now);
  const projects = Object.entries(config.projects)
    .flatMap(([project, p]) => {
      const before = p.retention_days === undefined ? null : cutoffFor(p.retention_days, now);
      // Only a horizon shorter than the global one removes anything the global one keeps.
      return before !== null && (raw === null || before > raw) ? [{ project, before }] : [];
    })
    .sort((a, b) => a.project.localeCompare(b.project));
  return { now, byClass: { raw, rollup: cutoffFor(r.rollup_days, now), audit: cutoffFor(r.audit_days, now) }, projects };
}
