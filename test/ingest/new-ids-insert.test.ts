import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import { requestProjections } from "../../src/compose.js";
import { createRequestStore } from "../../src/ingest/store-requests.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

/**
 * The store first inserts a batch without ON CONFLICT (every id new, the common case) and runs it
 * again with ON CONFLICT … DO NOTHING when it meets a stored id (src/ingest/store-requests.ts). Each
 * case takes a fresh store, so its first batch goes the first way whatever ran before.
 */
describe("ingest's insert of new ids, and its way back when a batch meets a stored one", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb.drop();
  });
  const db = () => tdb.database.db;
  const row = (over: Partial<RequestRow> = {}): RequestRow => ({
    id: randomUUID(),
    ts: new Date(),
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    provider: "openai",
    session_id: "s-new",
    agent_id: "agent-new",
    ttfb_ms: 120,
    cost_usd: "0.0010000000",
    ...over,
  });
  const requestsOf = async (table: string, project: string) =>
    (await queryRows<{ n: number }>(db(), sql`SELECT coalesce(sum(requests), 0)::int AS n FROM ${sql.raw(table)} WHERE project = ${project}`))[0]?.n;

  it("a batch of new ids then one mixing stored and new: each row stored, counted and rolled up once", async () => {
    const store = createRequestStore(requestProjections());
    const first = [row({ project: "p-mix" }), row({ project: "p-mix" })];
    expect(await store.store(db(), null, first)).toHaveLength(2);
    const fresh = row({ project: "p-mix" });
    const second = createRequestStore(requestProjections());
    const inserted = await second.store(db(), null, [first[1] as RequestRow, fresh, first[0] as RequestRow]);
    expect(inserted.map((r) => r.id)).toEqual([fresh.id]);
    // The same store again, now inserting with ON CONFLICT: the stored ids are skipped once more.
    expect((await second.store(db(), null, [fresh, row({ project: "p-mix" })])).length).toBe(1);
    for (const table of ["request_rollups", "request_rollups_daily", "request_model_rollups"]) {
      expect(await requestsOf(table, table === "request_model_rollups" ? "*" : "p-mix"), table).toBe(4);
    }
    const [s] = await queryRows<{ n: number }>(db(), sql`SELECT request_count AS n FROM sessions WHERE id = 's-new'`);
    expect(s?.n).toBe(4);
  });

  it("concurrent batches of the same ids, each store's first: each id stored once and counted once", async () => {
    const batch = Array.from({ length: 200 }, () => row({ session_id: "s-race-new", project: "p-race" }));
    const reversed = [...batch].reverse();
    const results = await Promise.all([batch, reversed, batch, reversed].map((b) => createRequestStore(requestProjections()).store(db(), null, b)));
    expect(results.reduce((n, r) => n + r.length, 0)).toBe(200);
    const [s] = await queryRows<{ n: number }>(db(), sql`SELECT request_count AS n FROM sessions WHERE id = 's-race-new'`);
    expect(s?.n).toBe(200);
    expect(await requestsOf("request_rollups", "p-race")).toBe(200);
  });

  it("a row from a probe call's room is stored and rolled up as probe, the others of its batch not", async () => {
    await db().execute(sql`INSERT INTO calls (room_sid, room_name, is_probe) VALUES ('RM_probe_new', 'room-probe-new', true)`);
    const probe = row({ project: "p-probe", room_name: "room-probe-new" });
    const plain = row({ project: "p-probe", room_name: "room-plain-new" });
    const inserted = await createRequestStore(requestProjections()).store(db(), null, [probe, plain]);
    expect(Object.fromEntries(inserted.map((r) => [r.id, r.is_probe ?? false]))).toEqual({ [probe.id]: true, [plain.id]: false });
    const stored = await queryRows<{ id: string; is_probe: boolean }>(db(), sql`SELECT id, is_probe FROM requests WHERE project = 'p-probe'`);
    expect(Object.fromEntries(stored.map((r) => [r.id, r.is_probe]))).toEqual({ [probe.id]: true, [plain.id]: false });
    const rolled = await queryRows<{ is_probe: boolean; n: number }>(
      db(),
      sql`SELECT is_probe, sum(requests)::int AS n FROM request_rollups WHERE project = 'p-probe' GROUP BY 1 ORDER BY 1`,
    );
    expect(rolled).toEqual([
      { is_probe: false, n: 1 },
      { is_probe: true, n: 1 },
    ]);
  });

  it("probe calls mark rows of their own tenant's or no tenant's rooms only, whichever way the batch is inserted", async () => {
    await db().execute(sql`INSERT INTO calls (room_sid, room_name, is_probe, tenant_id) VALUES
      ('RM_pt_acme', 'pt-acme', true, 'acme'), ('RM_pt_globex', 'pt-globex', true, 'globex'),
      ('RM_pt_none', 'pt-none', true, NULL), ('RM_pt_real', 'pt-real', false, 'acme')`);
    const rooms = ["pt-acme", "pt-globex", "pt-none", "pt-real", "pt-nocall", null];
    const batch = () => [
      ...rooms.flatMap((room_name) => [row({ tenant_id: "acme", project: "p-pt", room_name }), row({ tenant_id: "acme", project: "p-pt", room_name })]),
      // A row of another tenant than the batch's (ingest writes none): its own tenant's calls count.
      row({ tenant_id: "globex", project: "p-pt", room_name: "pt-globex" }),
    ];
    const want = (rows: RequestRow[]) =>
      Object.fromEntries(rows.map((r) => [r.id, r.tenant_id === "globex" || r.room_name === "pt-acme" || r.room_name === "pt-none"]));
    const store = createRequestStore(requestProjections());
    const first = batch();
    expect(Object.fromEntries((await store.store(db(), "acme", first)).map((r) => [r.id, r.is_probe ?? false]))).toEqual(want(first));
    // A stored id in the batch: the insert that skips it (ON CONFLICT) marks the others alike.
    const second = batch();
    const inserted = await store.store(db(), "acme", [first[0] as RequestRow, ...second]);
    expect(Object.fromEntries(inserted.map((r) => [r.id, r.is_probe ?? false]))).toEqual(want(second));
    const stored = await queryRows<{ id: string; is_probe: boolean }>(db(), sql`SELECT id, is_probe FROM requests WHERE project = 'p-pt'`);
    expect(Object.fromEntries(stored.map((r) => [r.id, r.is_probe]))).toEqual({ ...want(first), ...want(second) });
  });
});
