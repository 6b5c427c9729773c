import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import { storeRequestRows } from "../support/seed.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

/**
 * The ingest insert sends one Postgres array literal per column (src/ingest/store-requests.ts): every
 * value must come back exactly as given, whatever characters a text holds (quotes, backslashes,
 * braces, commas, the word NULL, an empty string, non-ASCII), and nulls, numbers, booleans, dates
 * and metadata objects keep their meaning.
 */
const AWKWARD = ['say "hi"', "back\\slash", "{braces},comma", "NULL", "", "  spaced  ", "é😀", 'mix \\" of "\\ both'];

describe("ingest's column arrays keep every value", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb.drop();
  });

  it("stores awkward texts, nulls, numbers, booleans, dates and metadata unchanged", async () => {
    const ts = new Date("2026-11-20T10:11:12.345Z");
    const rows: RequestRow[] = AWKWARD.map((text, i) => ({
      id: randomUUID(),
      ts,
      modality: "llm",
      model_id: `m/${text}`,
      provider: "p",
      project: `proj ${text}`,
      session_id: text === "" ? null : text,
      room_name: text,
      error_message: text,
      ttfb_ms: i === 0 ? 0 : 1.5e-7 * i,
      total_latency_ms: i === 1 ? Number.NaN : 12.25,
      cost_usd: "0.0000116",
      input_tokens: 2 ** 40 + i,
      // A JSON string as metadata stays a JSON string (as the JSON payload stored it); a null one is
      // SQL NULL beside the others (metadata goes as one JSON array), a null inside stays JSON null.
      metadata: i === 3 ? text : i === 4 ? null : { note: text, n: i, nested: { q: '"', none: null } },
      is_probe: i % 2 === 0,
    }));
    const inserted = await storeRequestRows(tdb.database.db, null, rows);
    expect(inserted).toHaveLength(rows.length);
    // Columns null in every row go as empty arrays, padded with NULLs: still one row each, all NULL.
    const [nulls] = await queryRows<{ n: number; set: number }>(
      tdb.database.db,
      sql`SELECT count(*)::int AS n, count(*) FILTER (WHERE fallback_from IS NOT NULL OR output_tokens IS NOT NULL OR agent_id IS NOT NULL)::int AS set FROM requests`,
    );
    expect(nulls).toEqual({ n: rows.length, set: 0 });
    const stored = await queryRows<Record<string, unknown>>(
      tdb.database.db,
      sql`SELECT id, (extract(epoch FROM ts) * 1000)::float8 AS ts_ms, model_id, project, session_id, room_name, error_message, ttfb_ms, total_latency_ms, cost_usd::text AS cost_usd,
                 input_tokens::text AS input_tokens, metadata, is_probe, status, pricing FROM requests`,
    );
    const byId = new Map(stored.map((r) => [r.id, r]));
    for (const [i, r] of rows.entries()) {
      const s = byId.get(r.id);
      expect(s).toEqual({
        id: r.id,
        ts_ms: ts.getTime(),
        model_id: r.model_id,
        project: r.project,
        session_id: r.session_id,
        room_name: r.room_name,
        error_message: r.error_message,
        ttfb_ms: r.ttfb_ms,
        // A non-finite number is NULL, as the JSON payload made it.
        total_latency_ms: i === 1 ? null : 12.25,
        cost_usd: "0.0000116000",
        input_tokens: String(2 ** 40 + i),
        metadata: r.metadata,
        is_probe: r.is_probe,
        // Defaults of the table for keys the row leaves out.
        status: "success",
        pricing: "priced",
      });
    }
  });

  it("a column of one value in every row (sent once, repeated by Postgres) is stored in every row; one-row batches too", async () => {
    const ts = new Date("2026-11-20T11:00:00.000Z");
    const meta = { note: 'same "for" all', n: 1 };
    const batch = (n: number, text: string): RequestRow[] =>
      Array.from({ length: n }, (_, i) => ({
        id: randomUUID(),
        ts,
        modality: "llm",
        model_id: `one/${text}`,
        provider: "p",
        project: text,
        // One value but for a null in the middle: sent row by row.
        session_id: i === 1 ? null : `s ${text}`,
        room_name: text,
        ttfb_ms: 7.5,
        total_latency_ms: 10 + i,
        cost_usd: "0.0000116",
        metadata: meta,
        is_probe: true,
      }));
    const rows = [...AWKWARD.flatMap((text) => [batch(3, text), batch(1, text)])];
    for (const b of rows) expect(await storeRequestRows(tdb.database.db, null, b)).toHaveLength(b.length);
    const stored = await queryRows<Record<string, unknown>>(
      tdb.database.db,
      sql`SELECT id, (extract(epoch FROM ts) * 1000)::float8 AS ts_ms, model_id, project, session_id, room_name, ttfb_ms, total_latency_ms,
                 cost_usd::text AS cost_usd, metadata, is_probe FROM requests WHERE model_id LIKE 'one/%'`,
    );
    const byId = new Map(stored.map((r) => [r.id, r]));
    expect(stored).toHaveLength(rows.flat().length);
    for (const b of rows) {
      for (const [i, r] of b.entries()) {
        expect(byId.get(r.id)).toEqual({
          id: r.id,
          ts_ms: ts.getTime(),
          model_id: r.model_id,
          project: r.project,
          session_id: i === 1 ? null : r.session_id,
          room_name: r.room_name,
          ttfb_ms: 7.5,
          total_latency_ms: 10 + i,
          cost_usd: "0.0000116000",
          metadata: meta,
          is_probe: true,
        });
      }
    }
  });

  it("stores every timestamp at its millisecond: across seconds and minutes, before 1970, at the last four-digit year", async () => {
    const base = Date.UTC(2026, 10, 20, 12, 58, 59, 990);
    // Within a minute and across the next two (the text up to the seconds is built once per minute),
    // then instants before 1970 (spelled by toISOString) and at the four-digit years' edges.
    const instants = [
      ...Array.from({ length: 40 }, (_, i) => base + i * 7),
      base + 61_000,
      base + 61_005,
      Date.UTC(2026, 10, 20, 13, 0, 0, 0),
      0,
      1,
      -1,
      Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      Date.UTC(1900, 0, 1, 0, 0, 0, 5),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    ];
    const rows: RequestRow[] = instants.map((ms) => ({
      id: randomUUID(),
      ts: new Date(ms),
      modality: "llm",
      model_id: "ts/edges",
      provider: "p",
    }));
    expect(await storeRequestRows(tdb.database.db, null, rows)).toHaveLength(rows.length);
    const stored = await queryRows<{ id: string; ts_ms: number }>(
      tdb.database.db,
      sql`SELECT id, (extract(epoch FROM ts) * 1000)::float8 AS ts_ms FROM requests WHERE model_id = 'ts/edges'`,
    );
    const byId = new Map(stored.map((r) => [r.id, r.ts_ms]));
    for (const r of rows) expect(byId.get(r.id), (r.ts as Date).toISOString()).toBe((r.ts as Date).getTime());
  });
});
