import type { EffectiveProject } from "../manage/registry.js";
import type { RecordObserver } from "./recorder.js";

/** What a project's budget says about a new call: serve, serve with a warning, refuse, or serve cheaper. */
export type BudgetDecision = "ok" | "warn" | "block" | "throttle";

/**
 * Decides from in-memory spend (the store's today_spend, refreshed in the background, plus this
 * replica's calls recorded since): a call never waits for the database.
 */
export interface BudgetGate extends RecordObserver {
  decide(project: EffectiveProject | undefined): BudgetDecision;
  /** The spend the last decision for this project was made on (for the warning header and logs). */
  spend(projectId: string): number;
  /** The cost of this replica's records of the project queued and not yet written to the store. */
  unwritten(projectId: string): number;
  /** Projects with records queued and not yet written. */
  unwrittenProjects(): Iterable<string>;
  stop?(): Promise<void>;
}

/** No budgets enforced. */
export const OPEN_BUDGETS: BudgetGate = {
  decide: () => "ok",
  spend: () => 0,
  unwritten: () => 0,
  unwrittenProjects: () => [],
  queued() {},
  written() {},
};
