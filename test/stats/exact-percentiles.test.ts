import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { rebuildRollups } from "../../src/rollups/rebuild.js";
import { useTestApp } from "../support/app.js";
import { runCli } from "../support/spawn.js";

/** Three turns of 700, 900 and 1100 ms have p50 = 900 on every path, never 907.03. */
const OPS = "ops-percentile-key-0123456789";
const yaml = `auth:\n  api_keys:\n    - ${OPS}\n`;
const SAMPLES = [700, 900, 1100];
const HOUR = 3_600_000;

describe("exact small-sample percentiles on every path", () => {
  const now = Date.now();
  const t = useTestApp({ yaml });
  beforeAll(async () => {
    // Requests in three different past hours (served from hour and day rollups merged in SQL) and
    // three in the current hour (served from raw rows), for two models.
    const records = SAMPLES.flatMap((ms, i) => [
      { id: randomUUID(), timestamp: new Date(now - (3 + i) * HOUR).toISOString(), modality: "llm", model_id: "openai/gpt-4.1-mini", ttfb_ms: ms, total_latency_ms: ms, input_tokens: 1, output_tokens: 1 },
      { id: randomUUID(), timestamp: new Date(now - i * 1000).toISOString(), modality: "stt", model_id: "deepgram/nova-3", ttfb_ms: ms, total_latency_ms: ms, audio_seconds: 1 },
    ]);
    expect((await t.call("POST", "/v1/ingest", { key: OPS, body: records })).status).toBe(200);
    const turns = SAMPLES.map((ms, i) => {
      const end = now - 60_000 + i * 10_000;
      return { session_id: "s-exact", room_name: "room-exact", turn_index: i, caller_speak_start_ms: end - 2000, caller_speak_end_ms: end, agent_speak_start_ms: end + ms, agent_speak_end_ms: end + ms + 500, response_speed_ms: ms };
    });
    expect((await t.call("POST", "/v1/ingest/turns", { key: OPS, body: turns })).status).toBe(200);
  });

  const json = async <T>(path: string) => {
    const res = await t.call("GET", path, { key: OPS });
    expect(res.status, path).toBe(200);
    return (await res.json()) as T;
  };

  it("room latency: p50 900", async () => {
    const room = await json<{ e2e_ms: { p50: number; p95: number; count: number } }>("/v1/rooms/room-exact/latency");
    expect(room.e2e_ms).toMatchObject({ count: 3, p50: 900, p95: 1100 });
  });

  it("/v1/latency: p50 900 from merged rollup sketches and from raw edge rows", async () => {
    type Models = { models: Record<string, { p50_ttfb_ms: number; p95_ttfb_ms: number; p50_total_latency_ms: number }> };
    for (const period of ["today", "week"]) {
      const r = await json<Models>(`/v1/latency?period=${period}`);
      for (const model of ["openai/gpt-4.1-mini", "deepgram/nova-3"]) {
        expect(r.models[model], `${period} ${model}`).toMatchObject({ p50_ttfb_ms: 900, p95_ttfb_ms: 1100, p50_total_latency_ms: 900 });
      }
    }
  });

  it("/v1/latency stays exact after rollups are rebuilt from raw rows in SQL", async () => {
    const day = 86_400_000;
    await rebuildRollups(t.services.database.db, new Date(Math.floor(now / day) * day - 2 * day), new Date(Math.floor(now / day) * day + day));
    const r = await json<{ models: Record<string, { p50_ttfb_ms: number }> }>("/v1/latency?period=week");
    expect(r.models["openai/gpt-4.1-mini"]?.p50_ttfb_ms).toBe(900);
  });

  it("metrics: the 0.5 quantile is 0.9 s", async () => {
    const res = await t.call("GET", "/v1/metrics", { key: OPS });
    const text = await res.text();
    expect(text).toMatch(/voxgate_request_total_latency_seconds\{quantile="0\.5"\} 0\.9\n/);
    expect(text).toMatch(/voxgate_request_ttfb_seconds\{quantile="0\.5"\} 0\.9\n/);
  });

  it("voxgate latency: p50 900 for the room", async () => {
    if (!t.testDb.url) return;
    const home = mkdtempSync(join(tmpdir(), "vg-exact-"));
    const out = await runCli(["latency", "--room", "room-exact", "--json"], { HOME: home, VOXGATE_CONFIG: undefined, DATABASE_URL: t.testDb.url });
    expect(out.code, out.stderr).toBe(0);
    expect((JSON.parse(out.stdout) as { e2e_ms: { p50: number } }).e2e_ms.p50).toBe(900);
  }, 120_000);
});
