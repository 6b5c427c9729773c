import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RANK_EXPR } from "../../src/db/schema/fleet-index-agent-rollups.js";

/**
 * The ranking's values are read from the rank indexes only while the query's expressions are the
 * indexes' own, text for text (src/db/schema/fleet-index-agent-rollups.ts RANK_EXPR): an edit to one
 * side alone would silently put the per-row conversion back. The latest migration creating each index
 * must carry the expressions the queries use.
 */
const MIGRATIONS = join(import.meta.dirname, "../../migrations");
function latestDefinition(index: string): string {
  const defs = readdirSync(MIGRATIONS)
    .filter((f) => f.endsWith(".sql"))
    .sort()
    .flatMap((f) => readFileSync(join(MIGRATIONS, f), "utf8").split("--> statement-breakpoint"))
    .filter((s) => s.includes(`CREATE INDEX "${index}"`));
  const last = defs.at(-1);
  if (!last) throw new Error(`no migration creates ${index}`);
  return last;
}

describe("rank indexes carry the ranking's expressions", () => {
  it("the daily rank index stores cost units and the row count", () => {
    const def = latestDefinition("fleet_index_agent_rollups_daily_rank_idx");
    expect(def).toContain(`(${RANK_EXPR.costUnits})`);
    expect(def).toContain(`(${RANK_EXPR.rollupRows})`);
  });
  it("the span rank index stores cost units and the row count", () => {
    const def = latestDefinition("fleet_index_agent_checkpoints_rank_idx");
    expect(def).toContain(`(${RANK_EXPR.costUnits})`);
    expect(def).toContain(`(${RANK_EXPR.spanRows})`);
  });
});
