/**
 * bench:rating: ratings/s of the pure rating function over a 100-rule card and a 1M-record
 * stream, against a no-op loop over the same stream in the same run. Target ≥ 1M ratings/s.
 */
import { compileCatalog } from "../src/billing/catalog.js";
import { SHIPPED_CATALOG } from "../src/billing/catalog-data.js";
import { compileRateCard, type RatingInput, rateRequest, seedRule } from "../src/billing/rate.js";
import { toRuleDef } from "../src/billing/rule-form.js";
import type { Modality, RateRuleInput } from "../src/config/schema.js";

const RECORDS = 1_000_000;
const RULES = 100;

const models = Object.entries(SHIPPED_CATALOG).filter(([k]) => !k.startsWith("self-hosted/"));
const tenants = Array.from({ length: 40 }, (_, i) => `tenant-${i}`);

// 100 rules of every scope shape and pricing form.
const rules: RateRuleInput[] = [{ sets: "price", modality: "stt", markup: 1.5 }, { sets: "price", modality: "llm", markup: 1.3 }];
const scopes = new Set<string>();
for (let i = 0; rules.length < RULES; i++) {
  const [modelId, e] = models[i % models.length] as [string, { modality: Modality }];
  const tenant = tenants[i % tenants.length];
  const shape = i % 4;
  if (shape === 0) rules.push({ sets: "price", tenant, model: modelId, markup: 1.1 + (i % 7) / 10 });
  else if (shape === 1 && e.modality === "tts") rules.push({ sets: "price", tenant, modality: "tts", fixed: 0.3, unit: "1k_char" });
  else if (shape === 1 && e.modality === "stt") rules.push({ sets: "price", tenant, modality: "stt", fixed: 0.02, unit: "minute" });
  else if (shape === 1) rules.push({ sets: "price", tenant, model: modelId, input_price_usd: 0.6, output_price_usd: 2.4, unit: "1m_token" });
  else if (shape === 2) rules.push({ sets: "cost", tenant, provider: modelId.split("/")[0], markup: 0.9 });
  else rules.push({ sets: "price", tenant, plan: `plan-${i % 3}`, markup: 1.2 });
  // One rule per scope: drop a generated duplicate so the card holds exactly RULES rules.
  const last = rules[rules.length - 1] as RateRuleInput;
  const key = [last.tenant, last.plan, last.modality, last.provider, last.model].join("|");
  if (scopes.has(key)) rules.pop();
  else scopes.add(key);
}
const card = compileRateCard(
  1.25,
  rules.map((r) => seedRule(toRuleDef(r))),
);
const catalog = compileCatalog({}, ["gpu-box"]);

// The stream: 1M distinct record objects (what ingest hands the rater), built before timing.
const stream: RatingInput[] = new Array(RECORDS);
for (let i = 0; i < RECORDS; i++) {
  const [modelId, e] = models[(i * 7) % models.length] as [string, { modality: Modality }];
  stream[i] = {
    modality: e.modality,
    modelId,
    provider: modelId.slice(0, modelId.indexOf("/")),
    tenantId: tenants[(i * 13) % tenants.length] ?? null,
    plan: `plan-${i % 3}`,
    status: i % 50 === 0 ? "error" : "success",
    inputTokens: e.modality === "llm" ? 500 + (i % 3000) : null,
    outputTokens: e.modality === "llm" ? 50 + (i % 400) : null,
    cachedInputTokens: e.modality === "llm" ? i % 500 : null,
    audioSeconds: e.modality === "stt" ? 1 + (i % 30) : null,
    characters: e.modality === "tts" ? 20 + (i % 300) : null,
    costUsd: i % 4 === 0 ? 0.001 : null,
  };
}

function baseline(): number {
  // Touches each record like the rater does (reads a field) so the loop is not optimised away.
  let acc = 0;
  for (let i = 0; i < RECORDS; i++) acc += (stream[i] as RatingInput).modelId.length;
  return acc;
}

function rateAll(): number {
  let acc = 0;
  for (let i = 0; i < RECORDS; i++) acc += rateRequest(stream[i] as RatingInput, card, catalog).ratedPriceUsd ?? 0;
  return acc;
}

function time(fn: () => number): { ms: number; sink: number } {
  const t0 = process.hrtime.bigint();
  const sink = fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, sink };
}

// Warm up (JIT, memo), then best of 5 for each.
rateAll();
baseline();
const runs = 5;
let best = Number.POSITIVE_INFINITY;
let bestBase = Number.POSITIVE_INFINITY;
for (let r = 0; r < runs; r++) {
  best = Math.min(best, time(rateAll).ms);
  bestBase = Math.min(bestBase, time(baseline).ms);
}
const perSec = RECORDS / (best / 1000);
const basePerSec = RECORDS / (bestBase / 1000);
console.log(`bench:rating — ${card.rules?.length} rules, ${RECORDS.toLocaleString("en")} records, best of ${runs}`);
console.log(`  rating:   ${best.toFixed(1)} ms  → ${Math.round(perSec).toLocaleString("en")} ratings/s  (target ≥ 1,000,000)`);
console.log(`  baseline: ${bestBase.toFixed(1)} ms  → ${Math.round(basePerSec).toLocaleString("en")} no-op iterations/s`);
console.log(`  ratio:    rating takes ${(best / bestBase).toFixed(1)}× the no-op loop; ${perSec >= 1e6 ? "meets" : "MISSES"} the target`);
