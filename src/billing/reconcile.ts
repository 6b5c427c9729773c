import { parse as parseCsv } from "csv-parse/sync";
import { z } from "zod";

/**
 * `voxgate reconcile`: compares a provider's usage export with the costs Voxgate recorded.
 * Pure: parse the file's rows, then diff them against recorded aggregates per model.
 * File formats: spec "Reconcile input files" (CSV with a header, or a JSON array; same fields).
 */

export const RECONCILE_PROVIDERS = ["openai", "deepgram", "elevenlabs"] as const;
export type ReconcileProvider = (typeof RECONCILE_PROVIDERS)[number];

/** CSV cells are strings: numbers are coerced, blanks are absent. */
const num = (int: boolean) =>
  z.preprocess(
    (v) => (typeof v === "string" ? (v.trim() === "" ? undefined : Number(v.trim())) : v),
    int ? z.number().int().nonnegative() : z.number().finite().nonnegative(),
  );

const common = {
  /** The provider's model id, without the `<provider>/` prefix the tool prepends. */
  model: z.string().trim().min(1).max(400),
  n_requests: num(true).optional(),
  cost_usd: num(false),
};

const ROW_SCHEMAS = {
  openai: z.looseObject({ ...common, input_tokens: num(true), output_tokens: num(true) }),
  deepgram: z.looseObject({ ...common, audio_seconds: num(false) }),
  elevenlabs: z.looseObject({ ...common, characters: num(true), credits: num(true).optional() }),
} as const;

export interface UsageRow {
  model: string;
  n_requests?: number;
  cost_usd: number;
  input_tokens?: number;
  output_tokens?: number;
  audio_seconds?: number;
  characters?: number;
  credits?: number;
}

export class ReconcileInputError extends Error {
  override name = "ReconcileInputError";
}

/** Parses a usage export; the format comes from the extension (.csv or .json). Rows are validated per provider. */
export function parseUsageFile(provider: ReconcileProvider, fileName: string, text: string): UsageRow[] {
  let raw: unknown;
  const lower = fileName.toLowerCase();
  if (lower.endsWith(".json")) {
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new ReconcileInputError(`${fileName}: not valid JSON: ${(err as Error).message}`);
    }
    if (!Array.isArray(raw)) throw new ReconcileInputError(`${fileName}: expected a top-level JSON array of objects`);
  } else if (lower.endsWith(".csv")) {
    try {
      raw = parseCsv(text, { columns: (header: string[]) => header.map((h) => h.trim()), skip_empty_lines: true, bom: true, trim: true });
    } catch (err) {
      throw new ReconcileInputError(`${fileName}: not valid CSV: ${(err as Error).message}`);
    }
  } else {
    throw new ReconcileInputError(`${fileName}: unknown format; use a .csv (header row required) or .json (array) file`);
  }
  const schema = ROW_SCHEMAS[provider];
  return (raw as unknown[]).map((row, i) => {
    const r = schema.safeParse(row);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new ReconcileInputError(`${fileName}: row ${i + 1}: ${issue?.path.join(".") || "(row)"}: ${issue?.message ?? "invalid"}`);
    }
    return r.data as UsageRow;
  });
}

/** What Voxgate recorded for one model id over the window. */
export interface RecordedModel {
  modelId: string;
  requests: number;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  audioSeconds: number;
  characters: number;
}

const round = (n: number, d = 10) => Math.round(n * 10 ** d) / 10 ** d;
const pct = (diff: number, base: number) => (base === 0 ? null : round((diff / base) * 100, 4));

/**
 * Diffs the export against the recorded aggregates. Rows of one model are summed first (an export may
 * split a model across days). Diffs are recorded − provider (positive: Voxgate recorded more).
 */
export function reconcile(provider: ReconcileProvider, rows: UsageRow[], recorded: RecordedModel[]) {
  const byModel = new Map<string, UsageRow & { rows: number }>();
  for (const r of rows) {
    const id = `${provider}/${r.model}`;
    const acc = byModel.get(id) ?? { model: r.model, cost_usd: 0, rows: 0 };
    acc.rows++;
    acc.cost_usd += r.cost_usd;
    for (const k of ["n_requests", "input_tokens", "output_tokens", "audio_seconds", "characters", "credits"] as const) {
      const v = r[k];
      if (v !== undefined) acc[k] = (acc[k] ?? 0) + v;
    }
    byModel.set(id, acc);
  }
  const rec = new Map(recorded.map((m) => [m.modelId, m]));
  const matched = [];
  const unmatched = [];
  for (const [modelId, f] of byModel) {
    const m = rec.get(modelId);
    if (!m) {
      unmatched.push({ model: f.model, model_id: modelId, provider_cost_usd: round(f.cost_usd), reason: "no recorded requests for this model" });
      continue;
    }
    const costDiff = round(m.costUsd - f.cost_usd);
    const units: Record<string, { provider: number; recorded: number; diff: number; diff_pct: number | null }> = {};
    const unit = (name: string, fileValue: number | undefined, recordedValue: number) => {
      if (fileValue === undefined) return;
      units[name] = { provider: fileValue, recorded: recordedValue, diff: round(recordedValue - fileValue, 4), diff_pct: pct(recordedValue - fileValue, fileValue) };
    };
    if (provider === "openai") {
      unit("input_tokens", f.input_tokens, m.inputTokens);
      unit("output_tokens", f.output_tokens, m.outputTokens);
    } else if (provider === "deepgram") unit("audio_seconds", f.audio_seconds, m.audioSeconds);
    else if (f.credits !== undefined) unit("characters", f.characters, m.characters);
    matched.push({
      model: f.model,
      model_id: modelId,
      provider_cost_usd: round(f.cost_usd),
      recorded_cost_usd: round(m.costUsd),
      cost_diff_usd: costDiff,
      cost_diff_pct: pct(costDiff, f.cost_usd),
      units,
      metadata: {
        provider_rows: f.rows,
        ...(f.n_requests !== undefined ? { provider_n_requests: f.n_requests } : {}),
        recorded_requests: m.requests,
        ...(f.credits !== undefined ? { credits: f.credits } : {}),
      },
    });
  }
  const notInFile = recorded.filter((m) => !byModel.has(m.modelId)).map((m) => ({ model_id: m.modelId, recorded_cost_usd: round(m.costUsd), recorded_requests: m.requests }));
  const providerTotal = round([...byModel.values()].reduce((a, f) => a + f.cost_usd, 0));
  const recordedTotal = round(matched.reduce((a, m) => a + m.recorded_cost_usd, 0));
  const matchedProvider = round(matched.reduce((a, m) => a + m.provider_cost_usd, 0));
  return {
    provider,
    rows: matched.sort((a, b) => Math.abs(b.cost_diff_usd) - Math.abs(a.cost_diff_usd)),
    unmatched,
    recorded_not_in_file: notInFile,
    totals: {
      provider_cost_usd: providerTotal,
      matched_provider_cost_usd: matchedProvider,
      matched_recorded_cost_usd: recordedTotal,
      cost_diff_usd: round(recordedTotal - matchedProvider),
    },
  };
}
