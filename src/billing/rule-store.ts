import { moneyText } from "../money.js";
import { eq } from "drizzle-orm";
import type { AuthContext } from "../auth/context.js";
import { randomBase62 } from "../auth/virtual-keys.js";
import { recordAudit } from "../audit/record.js";
import type { Modality, RateRuleInput } from "../config/schema.js";
import { rateRuleInputSchema } from "../config/schema.js";
import type { Db } from "../db/client.js";
import { rateRules } from "../db/schema/index.js";
import { DomainError, zodDetails } from "../errors.js";
import type { CardRule } from "./rate.js";
import { type FixedUnit, type PricingForm, pricingFormProblems, type RuleDef, ruleToken, scopeKey, specificity, type TokenUnit, toRuleDef } from "./rule-form.js";

type RuleRow = typeof rateRules.$inferSelect;

/**
 * Validates a rule body (HTTP or CLI): shape, bounds and the endpoint-16 matrix. Every failure is a
 * 400 invalid_rate_rule with the offending field paths; nothing is stored.
 */
export function parseRuleBody(body: unknown): RuleDef {
  const shape = rateRuleInputSchema.safeParse(body);
  if (!shape.success) {
    const details = zodDetails(shape.error);
    throw new DomainError("invalid_rate_rule", `invalid rate rule: ${details[0]?.path || "(body)"}: ${details[0]?.message ?? "invalid"}`, details);
  }
  const problems = pricingFormProblems(shape.data);
  if (problems.length > 0) {
    throw new DomainError("invalid_rate_rule", `invalid rate rule: ${problems[0]?.path || "(body)"}: ${problems[0]?.message}`, problems);
  }
  return toRuleDef(shape.data);
}

const num = (v: string | null): number | null => (v === null ? null : Number(v));

function rowToRule(row: RuleRow): CardRule {
  let form: PricingForm;
  if (row.markup !== null) form = { kind: "markup", markup: Number(row.markup) };
  else if (row.fixed !== null) form = { kind: "fixed", fixed: Number(row.fixed), unit: row.unit as FixedUnit };
  else {
    const input = num(row.inputPriceUsd) ?? 0;
    form = { kind: "tokens", input, output: num(row.outputPriceUsd) ?? 0, cachedInput: num(row.cachedInputPriceUsd) ?? input, unit: row.unit as TokenUnit };
  }
  const def: RuleDef = {
    tenant: row.tenant,
    plan: row.plan,
    modality: row.modality as Modality | null,
    provider: row.provider,
    model: row.model,
    sets: row.sets === "cost" ? "cost" : "price",
    form,
  };
  return {
    ...def,
    ruleId: row.ruleId,
    source: "db",
    scopeKey: row.scopeKey,
    token: ruleToken(form),
    specificity: specificity(def),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

function ruleColumns(def: RuleDef) {
  const f = def.form;
  const money = moneyText;
  return {
    scopeKey: scopeKey(def),
    tenant: def.tenant,
    plan: def.plan,
    modality: def.modality,
    provider: def.provider,
    model: def.model,
    sets: def.sets,
    markup: money(f.kind === "markup" ? f.markup : undefined),
    fixed: money(f.kind === "fixed" ? f.fixed : undefined),
    unit: f.kind === "markup" ? null : f.unit,
    inputPriceUsd: money(f.kind === "tokens" ? f.input : undefined),
    outputPriceUsd: money(f.kind === "tokens" ? f.output : undefined),
    cachedInputPriceUsd: money(f.kind === "tokens" ? f.cachedInput : undefined),
  };
}

/** Database override rules, oldest first. */
export async function listDbRules(db: Db): Promise<CardRule[]> {
  const rows = await db.select().from(rateRules).orderBy(rateRules.createdAt, rateRules.ruleId);
  return rows.map(rowToRule);
}

/** Upserts the one rule of def's scope (keeping its rule_id) and audits it, in one transaction. */
export async function upsertRule(db: Db, auth: AuthContext, def: RuleDef): Promise<{ rule: CardRule; created: boolean }> {
  return db.transaction(async (tx) => {
    const cols = ruleColumns(def);
    const [existing] = await tx.select().from(rateRules).where(eq(rateRules.scopeKey, cols.scopeKey)).for("update");
    let row: RuleRow | undefined;
    if (existing) {
      [row] = await tx.update(rateRules).set({ ...cols, updatedAt: new Date() }).where(eq(rateRules.ruleId, existing.ruleId)).returning();
    } else {
      [row] = await tx
        .insert(rateRules)
        .values({ ruleId: `rr_${randomBase62(16)}`, ...cols })
        // Two concurrent first writes of one scope: the second becomes an update, never a 500.
        .onConflictDoUpdate({ target: rateRules.scopeKey, set: { ...cols, updatedAt: new Date() } })
        .returning();
    }
    if (!row) throw new Error("rate rule upsert returned no row");
    const rule = rowToRule(row);
    await recordAudit(tx, auth, {
      entityType: "rate_rule",
      entityId: rule.ruleId ?? "",
      action: existing ? "update" : "create",
      before: existing ? publicRule(rowToRule(existing)) : undefined,
      after: publicRule(rule),
    });
    return { rule, created: !existing };
  });
}

/** Deletes a rule by id and audits it; null when no rule has the id. */
export async function deleteRule(db: Db, auth: AuthContext, ruleId: string): Promise<CardRule | null> {
  return db.transaction(async (tx) => {
    const [row] = await tx.delete(rateRules).where(eq(rateRules.ruleId, ruleId)).returning();
    if (!row) return null;
    const rule = rowToRule(row);
    await recordAudit(tx, auth, { entityType: "rate_rule", entityId: ruleId, action: "delete", before: publicRule(rule) });
    return rule;
  });
}

/** JSON form of a rule: its scope, what it sets, its one pricing form, its audit token. Seed rules have no rule_id. */
export function publicRule(r: CardRule) {
  const f = r.form;
  return {
    ...(r.ruleId !== null ? { rule_id: r.ruleId } : {}),
    source: r.source,
    rule: r.token,
    scope_key: r.scopeKey,
    tenant: r.tenant,
    plan: r.plan,
    modality: r.modality,
    provider: r.provider,
    model: r.model,
    sets: r.sets,
    markup: f.kind === "markup" ? f.markup : null,
    fixed: f.kind === "fixed" ? f.fixed : null,
    unit: f.kind === "markup" ? null : f.unit,
    input_price_usd: f.kind === "tokens" ? f.input : null,
    output_price_usd: f.kind === "tokens" ? f.output : null,
    cached_input_price_usd: f.kind === "tokens" ? f.cachedInput : null,
    ...(r.createdAt ? { created_at: r.createdAt.toISOString() } : {}),
    ...(r.updatedAt ? { updated_at: r.updatedAt.toISOString() } : {}),
  };
}

export type { RateRuleInput };
