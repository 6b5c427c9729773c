import type { AuthContext } from "../auth/context.js";
import type { Db } from "../db/client.js";
import type { Logger } from "../logging.js";
import { deleteRule, parseRuleBody, upsertRule } from "./rule-store.js";

/** What a rule change needs: the database, and in a running server the rate card to refresh and the log. */
export interface RuleDeps {
  db: Db;
  rateCard?: { refresh(): Promise<unknown> };
  log?: Logger;
}

/**
 * Rule upsert shared by POST /v1/billing/rate-card/rules and `voxgate rates set`: validate (400
 * invalid_rate_rule), store with its audit entry, refresh the server's card when there is one.
 */
export async function setRule(deps: RuleDeps, actor: AuthContext, body: unknown) {
  const { rule, created } = await upsertRule(deps.db, actor, parseRuleBody(body));
  await deps.rateCard?.refresh();
  deps.log?.info({ rule_id: rule.ruleId, scope_key: rule.scopeKey, rule: rule.token, actor: actor.actor }, "rate rule upserted");
  return { rule, created };
}

/** Rule delete shared by DELETE …/rules/{rule_id} and `voxgate rates delete`: null when no such rule. */
export async function removeRule(deps: RuleDeps, actor: AuthContext, ruleId: string) {
  const rule = await deleteRule(deps.db, actor, ruleId);
  if (!rule) return null;
  await deps.rateCard?.refresh();
  deps.log?.info({ rule_id: ruleId, scope_key: rule.scopeKey, actor: actor.actor }, "rate rule deleted");
  return rule;
}
