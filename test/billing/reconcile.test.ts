import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseUsageFile, ReconcileInputError, reconcile } from "../../src/billing/reconcile.js";
import { recordedByModel } from "../../src/billing/usage.js";
import { requests } from "../../src/db/schema/index.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

const recordedOpenai = [
  { modelId: "openai/gpt-4o", requests: 10, costUsd: 1.5, inputTokens: 100_000, outputTokens: 20_000, audioSeconds: 0, characters: 0 },
  { modelId: "openai/gpt-4o-mini", requests: 3, costUsd: 0.01, inputTokens: 3000, outputTokens: 300, audioSeconds: 0, characters: 0 },
];

describe("reconcile: parsing usage exports", () => {
  it("CSV (any column order, header required) and JSON are equivalent", () => {
    const csv = "cost_usd,output_tokens,model,input_tokens,n_requests\n1.4,19000,gpt-4o,98000,9\n";
    const json = JSON.stringify([{ model: "gpt-4o", input_tokens: 98000, output_tokens: 19000, cost_usd: 1.4, n_requests: 9 }]);
    expect(parseUsageFile("openai", "u.csv", csv)).toEqual(parseUsageFile("openai", "u.json", json));
  });

  it("requires each provider's fields and rejects unknown formats", () => {
    expect(() => parseUsageFile("openai", "u.csv", "model,cost_usd\ngpt-4o,1\n")).toThrow(/input_tokens/);
    expect(() => parseUsageFile("deepgram", "u.json", '[{"model":"nova-3","cost_usd":1}]')).toThrow(/audio_seconds/);
    expect(() => parseUsageFile("elevenlabs", "u.json", '[{"model":"eleven_flash_v2_5","cost_usd":-1,"characters":5}]')).toThrow(ReconcileInputError);
    expect(() => parseUsageFile("openai", "u.json", '{"model":"x"}')).toThrow(/array/);
    expect(() => parseUsageFile("openai", "u.xlsx", "")).toThrow(/format/);
    expect(() => parseUsageFile("openai", "u.csv", "model,cost_usd,input_tokens,output_tokens\ngpt-4o,abc,1,1\n")).toThrow(/row 1: cost_usd/);
    // audio_seconds may be a float; token counts must be integers
    expect(parseUsageFile("deepgram", "u.csv", "model,cost_usd,audio_seconds\nnova-3,0.5,90.5\n")[0]?.audio_seconds).toBe(90.5);
    expect(() => parseUsageFile("openai", "u.csv", "model,cost_usd,input_tokens,output_tokens\ngpt-4o,1,1.5,1\n")).toThrow(/input_tokens/);
  });
});

describe("reconcile: the diff", () => {
  it("diffs cost and units per model (summing split rows), reports unmatched rows and recorded-only models", () => {
    const rows = parseUsageFile(
      "openai",
      "u.csv",
      "model,input_tokens,output_tokens,cost_usd,n_requests\ngpt-4o,60000,10000,0.8,5\ngpt-4o,38000,9000,0.6,4\ngpt-4o-audio,0,0,2,1\n",
    );
    const report = reconcile("openai", rows, recordedOpenai);
    expect(report.rows).toEqual([
      {
        model: "gpt-4o",
        model_id: "openai/gpt-4o",
        provider_cost_usd: 1.4,
        recorded_cost_usd: 1.5,
        cost_diff_usd: 0.1,
        cost_diff_pct: 7.1429,
        units: {
          input_tokens: { provider: 98000, recorded: 100000, diff: 2000, diff_pct: 2.0408 },
          output_tokens: { provider: 19000, recorded: 20000, diff: 1000, diff_pct: 5.2632 },
        },
        metadata: { provider_rows: 2, provider_n_requests: 9, recorded_requests: 10 },
      },
    ]);
    expect(report.unmatched).toEqual([{ model: "gpt-4o-audio", model_id: "openai/gpt-4o-audio", provider_cost_usd: 2, reason: "no recorded requests for this model" }]);
    expect(report.recorded_not_in_file).toEqual([{ model_id: "openai/gpt-4o-mini", recorded_cost_usd: 0.01, recorded_requests: 3 }]);
    expect(report.totals).toEqual({ provider_cost_usd: 3.4, matched_provider_cost_usd: 1.4, matched_recorded_cost_usd: 1.5, cost_diff_usd: 0.1 });
  });

  it("tts: a units diff only when credits are given; stt: audio seconds", () => {
    const rec = [{ modelId: "elevenlabs/eleven_flash_v2_5", requests: 2, costUsd: 0.1, inputTokens: 0, outputTokens: 0, audioSeconds: 0, characters: 2000 }];
    const withCredits = reconcile("elevenlabs", parseUsageFile("elevenlabs", "u.json", '[{"model":"eleven_flash_v2_5","characters":2100,"credits":1050,"cost_usd":0.105}]'), rec);
    expect(withCredits.rows[0]?.units).toEqual({ characters: { provider: 2100, recorded: 2000, diff: -100, diff_pct: -4.7619 } });
    expect(withCredits.rows[0]?.metadata).toMatchObject({ credits: 1050 });
    const flat = reconcile("elevenlabs", parseUsageFile("elevenlabs", "u.json", '[{"model":"eleven_flash_v2_5","characters":0,"cost_usd":0.1}]'), rec);
    expect(flat.rows[0]?.units).toEqual({});
    expect(flat.rows[0]?.cost_diff_usd).toBe(0);

    const stt = [{ modelId: "deepgram/nova-3", requests: 4, costUsd: 0.0308, inputTokens: 0, outputTokens: 0, audioSeconds: 240, characters: 0 }];
    const r = reconcile("deepgram", parseUsageFile("deepgram", "u.csv", "model,audio_seconds,cost_usd\nnova-3,240,0.0308\n"), stt);
    expect(r.rows[0]).toMatchObject({ cost_diff_usd: 0, units: { audio_seconds: { provider: 240, recorded: 240, diff: 0, diff_pct: 0 } } });
  });
});

describe("reconcile: recorded totals and the CLI", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    const base = { ts: new Date("2026-10-05T00:00:00Z"), modality: "llm", provider: "openai", status: "success", pricing: "priced" };
    await tdb.database.db.insert(requests).values([
      { ...base, id: randomUUID(), modelId: "openai/gpt-4o", costUsd: "0.75", inputTokens: 50_000, outputTokens: 10_000 },
      { ...base, id: randomUUID(), modelId: "openai/gpt-4o", costUsd: "0.75", inputTokens: 50_000, outputTokens: 10_000 },
      { ...base, id: randomUUID(), modelId: "openai/gpt-4o", costUsd: "9", ts: new Date("2026-12-01T00:00:00Z") },
      { ...base, id: randomUUID(), modelId: "openaix/other", provider: "openaix", costUsd: "5" },
    ]);
  });
  afterAll(async () => {
    await tdb.drop();
  });

  it("aggregates one provider's recorded requests per model over a window", async () => {
    const rec = await recordedByModel(tdb.database.db, { provider: "openai", from: new Date("2026-10-01"), to: new Date("2026-11-01") });
    expect(rec).toEqual([{ modelId: "openai/gpt-4o", requests: 2, costUsd: 1.5, inputTokens: 100_000, outputTokens: 20_000, audioSeconds: 0, characters: 0 }]);
  });

  it("voxgate reconcile prints the report", async () => {
    if (!tdb.url) return; // the CLI opens its own connection: Postgres only
    const dir = mkdtempSync(join(tmpdir(), "vg-reconcile-"));
    const file = join(dir, "openai.csv");
    writeFileSync(file, "model,input_tokens,output_tokens,cost_usd\ngpt-4o,100000,20000,1.4\n");
    const { VOXGATE_CONFIG: _, ...env } = process.env;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "reconcile", "--provider", "openai", "--provider-usage-file", file, "--from", "2026-10-01", "--to", "2026-11-01"],
      { env: { ...env, DATABASE_URL: tdb.url, HOME: "/nonexistent" }, timeout: 60_000 },
    );
    const report = JSON.parse(stdout) as { rows: { cost_diff_usd: number }[] };
    expect(report.rows[0]?.cost_diff_usd).toBe(0.1);
  });
});
