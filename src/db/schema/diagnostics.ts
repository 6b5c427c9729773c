import { sql } from "drizzle-orm";
import { bigserial, bigint, index, pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** One diagnostics run (voxgate check or an agent's self-test); gates hang off it. */
export const diagRuns = pgTable(
  "diag_runs",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    tenantId: text(),
    agentId: text(),
    /** PASS | WARN | UNKNOWN | FAIL */
    verdict: text().notNull(),
    startedAt: tstz().notNull().default(sql`now()`),
    finishedAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [index("diag_runs_finished_idx").on(t.finishedAt)],
);

export const diagGates = pgTable(
  "diag_gates",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    runId: bigint({ mode: "number" }).notNull(),
    gateId: text().notNull(),
    /** PASS | WARN | UNKNOWN | FAIL */
    status: text().notNull(),
    detail: text(),
  },
  (t) => [index("diag_gates_run_idx").on(t.runId)],
);
