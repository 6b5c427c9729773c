import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { INGEST_BATCH_CAP } from "../../src/ingest/batch.js";
import { useTestApp } from "../support/app.js";
import { ACME, AUTH_YAML, countOf, GLOBEX, OPS, READER, record, rows } from "./helpers.js";

interface IngestAnswer {
  received: number;
  accepted: number;
  duplicates: number;
  skipped: number;
  skipped_records: { index: number; id: string | null; reason: string }[];
}

describe("POST /v1/ingest", () => {
  const t = useTestApp({ yaml: AUTH_YAML });
  const db = () => t.services.database.db;
  const ingest = async (body: unknown, key = ACME) => {
    const res = await t.call("POST", "/v1/ingest", { key, body });
    return { status: res.status, body: (await res.json()) as IngestAnswer };
  };

  it("collector facts: [] without a key is 401, with a valid key 2xx; a read key is 403", async () => {
    expect((await t.call("POST", "/v1/ingest", { body: [] })).status).toBe(401);
    expect((await t.call("POST", "/v1/ingest", { body: [], key: "nope" })).status).toBe(401);
    expect((await t.call("POST", "/v1/ingest", { body: [], key: READER })).status).toBe(403);
    const ok = await ingest([]);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ accepted: 0, duplicates: 0, skipped: 0 });
    expect((await ingest([], GLOBEX)).status).toBe(200);
    expect((await ingest([], OPS)).status).toBe(200);
  });

  it("stores a record with tenant from the key, ignoring unknown keys and a body tenant_id", async () => {
    const r = record({ tenant_id: "globex", surprise: { nested: true }, session_id: "s-basic", project: "support" });
    const res = await ingest([r]);
    expect(res.body).toMatchObject({ received: 1, accepted: 1, duplicates: 0, skipped: 0 });
    const [row] = await rows(db(), sql`SELECT tenant_id, project, provider, modality FROM requests WHERE id = ${r.id}`);
    expect(row).toEqual({ tenant_id: "acme", project: "support", provider: "openai", modality: "llm" });
  });

  it("stores metadata as is, status/error fields, latencies and is_probe", async () => {
    const r = record({
      metadata: { voice: "aria", nested: { list: [1, "two", null] } },
      status: "fallback",
      fallback_from: "openai/gpt-4.1",
      error_message: "primary timed out",
      ttfb_ms: 120.5,
      total_latency_ms: 480,
      is_probe: true,
      agent_id: "agent-7",
    });
    expect((await ingest([r])).body.accepted).toBe(1);
    const [row] = await rows(
      db(),
      sql`SELECT metadata, status, fallback_from, error_message, ttfb_ms, total_latency_ms, is_probe, agent_id FROM requests WHERE id = ${r.id}`,
    );
    expect(row).toEqual({
      metadata: { voice: "aria", nested: { list: [1, "two", null] } },
      status: "fallback",
      fallback_from: "openai/gpt-4.1",
      error_message: "primary timed out",
      ttfb_ms: 120.5,
      total_latency_ms: 480,
      is_probe: true,
      agent_id: "agent-7",
    });
  });

  it("records from a room whose call is already marked probe are stored as probe", async () => {
    await db().execute(sql`INSERT INTO calls (room_sid, room_name, is_probe) VALUES ('RM_probe_ing', 'room-probe-ing', true)`);
    const probe = record({ room_name: "room-probe-ing" });
    const prod = record({ room_name: "room-prod-ing" });
    expect((await ingest([probe, prod])).body.accepted).toBe(2);
    const flags = await rows(db(), sql`SELECT room_name, is_probe FROM requests WHERE id IN (${probe.id}, ${prod.id}) ORDER BY room_name`);
    expect(flags).toEqual([
      { room_name: "room-probe-ing", is_probe: true },
      { room_name: "room-prod-ing", is_probe: false },
    ]);
  });

  it("defaults: project 'default', provider from the model_id prefix, status success; explicit provider wins", async () => {
    const a = record({ model_id: "deepgram/nova-3", modality: "stt", audio_seconds: 30 });
    const b = record({ model_id: "gpu-box/llama", provider: "selfhost" });
    await ingest([a, b]);
    const got = await rows<{ id: string; project: string; provider: string; status: string }>(
      db(),
      sql`SELECT id, project, provider, status FROM requests WHERE id IN (${a.id}, ${b.id}) ORDER BY provider`,
    );
    expect(got.find((g) => g.id === a.id)).toMatchObject({ project: "default", provider: "deepgram", status: "success" });
    expect(got.find((g) => g.id === b.id)).toMatchObject({ provider: "selfhost" });
  });

  it("timestamps: ISO string, epoch seconds (float) and epoch ms, told apart by magnitude", async () => {
    const when = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const iso = record({ timestamp: new Date(when).toISOString() });
    const secs = record({ timestamp: when / 1000 });
    const ms = record({ timestamp: when });
    // An operator key: a tenant-bound key may not date records further back than the horizon (docs/billing.md).
    expect((await ingest([iso, secs, ms], OPS)).body.accepted).toBe(3);
    const got = await rows<{ ms: string }>(
      db(),
      sql`SELECT (extract(epoch from ts) * 1000)::bigint::text AS ms FROM requests WHERE id IN (${iso.id}, ${secs.id}, ${ms.id})`,
    );
    expect(got.map((g) => Number(g.ms))).toEqual([when, when, when]);
  });

  it("fills specific and generic units both ways (stt minutes ↔ audio_seconds, llm tokens, tts characters)", async () => {
    const sttGeneric = record({ modality: "stt", model_id: "deepgram/nova-3", input_units: 2, input_tokens: undefined });
    const sttSpecific = record({ modality: "stt", model_id: "deepgram/nova-3", audio_seconds: 90 });
    const llmGeneric = record({ input_tokens: undefined, output_tokens: undefined, input_units: 500, output_units: 40 });
    const ttsGeneric = record({ modality: "tts", model_id: "elevenlabs/flash", input_units: 1200 });
    const both = record({ input_tokens: 7, input_units: 999 });
    await ingest([sttGeneric, sttSpecific, llmGeneric, ttsGeneric, both]);
    const byId = new Map(
      (
        await rows<{ id: string; audio_seconds: number | null; input_units: number | null; input_tokens: string | null; output_tokens: string | null; output_units: number | null; characters: string | null }>(
          db(),
          sql`SELECT id, audio_seconds, input_units, input_tokens, output_tokens, output_units, characters FROM requests`,
        )
      ).map((r) => [r.id, r]),
    );
    expect(byId.get(String(sttGeneric.id))).toMatchObject({ audio_seconds: 120, input_units: 2 });
    expect(byId.get(String(sttSpecific.id))).toMatchObject({ audio_seconds: 90, input_units: 1.5 });
    expect(byId.get(String(llmGeneric.id))).toMatchObject({ input_units: 500, output_units: 40 });
    expect(Number(byId.get(String(llmGeneric.id))?.input_tokens)).toBe(500);
    expect(Number(byId.get(String(llmGeneric.id))?.output_tokens)).toBe(40);
    expect(Number(byId.get(String(ttsGeneric.id))?.characters)).toBe(1200);
    expect(byId.get(String(ttsGeneric.id))?.input_units).toBe(1200);
    expect(Number(byId.get(String(both.id))?.input_tokens)).toBe(7);
    expect(byId.get(String(both.id))?.input_units).toBe(7);
  });

  it("re-rates every record with the collector's card, overwriting rated_price_usd and rate_rule", async () => {
    const r = record({ cost_usd: 0.002, rated_price_usd: 99, rate_rule: "agent-made" });
    // An operator key: its reported cost is the basis (a tenant key's is not, see test/security/tenant-pricing).
    await ingest([r], OPS);
    const [row] = await rows<{ cost_usd: string; rated_price_usd: string; rate_rule: string; pricing: string }>(
      db(),
      sql`SELECT cost_usd::text, rated_price_usd::text, rate_rule, pricing FROM requests WHERE id = ${r.id}`,
    );
    expect(Number(row?.cost_usd)).toBe(0.002);
    expect(Number(row?.rated_price_usd)).toBeCloseTo(0.003, 10);
    expect(row?.rate_rule).toBe("cost_plus:1.5");
  });

  it("skips and counts records missing required fields or with wrong types, storing the rest", async () => {
    const good = record();
    const bad = [
      { ...record(), id: undefined },
      { ...record(), timestamp: undefined },
      { ...record(), modality: "video" },
      { ...record(), model_id: undefined },
      { ...record(), id: "not-a-uuid" },
      { ...record(), cost_usd: -1 },
      { ...record(), input_tokens: "lots" },
      { ...record(), model_id: "no-prefix" },
      "a string",
      null,
      [1, 2],
    ];
    const res = await ingest([good, ...bad]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ received: 12, accepted: 1, skipped: 11, duplicates: 0 });
    expect(res.body.skipped_records.map((s) => s.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(res.body.skipped_records[0]?.reason).toMatch(/^id/);
  });

  it("counts a re-sent id as a duplicate and never writes it twice (same batch and across batches)", async () => {
    const r = record({ session_id: "s-dup" });
    expect((await ingest([r, r])).body).toMatchObject({ accepted: 1, duplicates: 1 });
    expect((await ingest([r])).body).toMatchObject({ accepted: 0, duplicates: 1 });
    const [n] = await rows<{ n: number }>(db(), sql`SELECT count(*)::int AS n FROM requests WHERE id = ${r.id}`);
    expect(n?.n).toBe(1);
    const [s] = await rows<{ request_count: number }>(db(), sql`SELECT request_count FROM sessions WHERE id = 's-dup'`);
    expect(s?.request_count).toBe(1);
  });

  it("a batch mixing stored and new ids: only the new rows reach the session and the rollups", async () => {
    const stored = [record({ session_id: "s-mixed", project: "p-mixed" }), record({ session_id: "s-mixed", project: "p-mixed" })];
    expect((await ingest(stored)).body).toMatchObject({ accepted: 2, duplicates: 0 });
    const fresh = record({ session_id: "s-mixed", project: "p-mixed" });
    expect((await ingest([stored[1], fresh, stored[0]])).body).toMatchObject({ accepted: 1, duplicates: 2 });
    const [s] = await rows<{ request_count: number }>(db(), sql`SELECT request_count FROM sessions WHERE id = 's-mixed'`);
    expect(s?.request_count).toBe(3);
    for (const table of ["request_rollups", "request_rollups_daily"]) {
      const [r] = await rows<{ n: number }>(db(), sql`SELECT sum(requests)::int AS n FROM ${sql.raw(table)} WHERE project = 'p-mixed'`);
      expect(r?.n, table).toBe(3);
    }
  });

  it("concurrent duplicate batches store each id once and count it once in its session", async () => {
    const batch = Array.from({ length: 200 }, () => record({ session_id: "s-race" }));
    const reversed = [...batch].reverse();
    const answers = await Promise.all([ingest(batch), ingest(reversed), ingest(batch), ingest(reversed)]);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.reduce((sum, a) => sum + a.body.accepted, 0)).toBe(200);
    expect(answers.reduce((sum, a) => sum + a.body.duplicates, 0)).toBe(600);
    const [s] = await rows<{ request_count: number }>(db(), sql`SELECT request_count FROM sessions WHERE id = 's-race'`);
    expect(s?.request_count).toBe(200);
  });

  it("upserts sessions: bounds, modalities, counts and cost summed in SQL, room and project", async () => {
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 3600_000;
    await ingest([
      record({ session_id: "s-agg", timestamp: t0, cost_usd: 0.1, project: "support", room_name: "room-1" }),
      record({ session_id: "s-agg", timestamp: t0 + 5000, modality: "stt", model_id: "deepgram/nova-3", cost_usd: 0.2 }),
    ]);
    await ingest([record({ session_id: "s-agg", timestamp: t0 - 1000, modality: "tts", model_id: "elevenlabs/x", cost_usd: 0.3 })]);
    const [s] = await rows<Record<string, unknown>>(
      db(),
      sql`SELECT tenant_id, project, room_name, modalities, request_count, total_cost_usd::text AS cost,
                 extract(epoch from started_at) * 1000 AS started, extract(epoch from ended_at) * 1000 AS ended
          FROM sessions WHERE id = 's-agg'`,
    );
    expect(s).toMatchObject({ tenant_id: "acme", project: "support", room_name: "room-1", request_count: 3 });
    expect(s?.modalities).toEqual(["llm", "stt", "tts"]);
    expect(s?.cost).toBe("0.6000000000");
    expect(Number(s?.started)).toBe(t0 - 1000);
    expect(Number(s?.ended)).toBe(t0 + 5000);
  });

  it("never modifies a session owned by another tenant: the same id is the other tenant's own session", async () => {
    await ingest([record({ session_id: "s-owned", cost_usd: 1 })], GLOBEX);
    const before = await rows(db(), sql`SELECT * FROM sessions WHERE id = 's-owned'`);
    const r = record({ session_id: "s-owned", cost_usd: 5, tenant_id: "globex" });
    expect((await ingest([r], ACME)).body.accepted).toBe(1);
    expect(await rows(db(), sql`SELECT * FROM sessions WHERE id = 's-owned' AND tenant_id = 'globex'`)).toEqual(before);
    const [acme] = await rows<{ request_count: number }>(db(), sql`SELECT request_count FROM sessions WHERE id = 's-owned' AND tenant_id = 'acme'`);
    expect(acme?.request_count).toBe(1);
    const [row] = await rows(db(), sql`SELECT tenant_id FROM requests WHERE id = ${r.id}`);
    expect(row).toEqual({ tenant_id: "acme" });
  });

  it(`enforces the batch cap of ${INGEST_BATCH_CAP} at and past its edge, before parsing`, async () => {
    const atCap = Array.from({ length: INGEST_BATCH_CAP }, () => ({ nope: 1 }));
    const ok = await ingest(atCap);
    expect(ok.status).toBe(200);
    expect(ok.body.skipped).toBe(INGEST_BATCH_CAP);
    const before = await countOf(db(), "requests");
    const over = Array.from({ length: INGEST_BATCH_CAP + 1 }, () => record());
    const res = await t.call("POST", "/v1/ingest", { key: ACME, body: over });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
    expect(await countOf(db(), "requests")).toBe(before);
    // The cap is counted on the raw text: an over-cap body that is not even valid JSON is still 413.
    const raw = `[${"1,".repeat(INGEST_BATCH_CAP + 5)}`;
    expect((await t.call("POST", "/v1/ingest", { key: ACME, raw, headers: { "content-type": "application/json" } })).status).toBe(413);
  });

  it("a non-array body is 422 and malformed JSON is 400, in the error envelope", async () => {
    const obj = await t.call("POST", "/v1/ingest", { key: ACME, body: { records: [record()] } });
    expect(obj.status).toBe(422);
    expect(((await obj.json()) as { error: { code: string } }).error.code).toBe("validation_failed");
    expect((await t.call("POST", "/v1/ingest", { key: ACME, body: 42 })).status).toBe(422);
    const bad = await t.call("POST", "/v1/ingest", { key: ACME, raw: "[{", headers: { "content-type": "application/json" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
  });

  it("answers with the documented counters only after commit: rows are readable at once", async () => {
    const batch = Array.from({ length: 50 }, () => record({ id: randomUUID() }));
    const res = await ingest(batch);
    expect(res.body.accepted).toBe(50);
    const ids = batch.map((b) => String(b.id));
    const [n] = await rows<{ n: number }>(
      db(),
      sql`SELECT count(*)::int AS n FROM requests WHERE id IN (SELECT json_array_elements_text(${JSON.stringify(ids)}::json)::uuid)`,
    );
    expect(n?.n).toBe(50);
  });
});
