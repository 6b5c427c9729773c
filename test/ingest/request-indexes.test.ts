import { type SQL, sql } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import type { Db } from "../../src/db/client.js";
import { useTestApp } from "../support/app.js";
import { planWith } from "../support/db.js";

/** Sequential scans priced out, and the generic plan a parameterised statement gets from the driver. */
const planWithoutSeqScan = (db: Db, stmt: SQL) => planWith(db, ["enable_seqscan = off", "plan_cache_mode = force_generic_plan"], stmt);

/**
 * requests_session_idx and requests_room_name_idx are partial (NOT NULL: migrations/0021), so rows
 * without a session or room skip them. That holds only while every lookup by session or room names
 * the value (an equality or IN list, which implies NOT NULL): these are the shapes the code uses, with
 * the value a parameter as the driver sends it.
 */
/** The parent's index, or a day partition's copy of it (requests_p20261128_session_id_idx). */
const SESSION_IDX = /requests(_session|\w*_session_id)_idx/;

describe("requests: the partial session and room indexes serve every lookup shape", () => {
  const t = useTestApp();
  it.skipIf(inject("dbBackend") !== "postgres")("session = x, session IN (…), room = x (the probe marking's UPDATE)", async () => {
    const db = t.services.database.db;
    const session = await planWithoutSeqScan(db, sql`SELECT id FROM requests WHERE session_id = ${"s-1"} AND tenant_id IS NOT DISTINCT FROM ${"acme"}::text`);
    expect(session).toMatch(SESSION_IDX);
    const sessions = await planWithoutSeqScan(db, sql`SELECT id FROM requests WHERE session_id IN (${"s-1"}, ${"s-2"})`);
    expect(sessions).toMatch(SESSION_IDX);
    const room = await planWithoutSeqScan(
      db,
      sql`UPDATE requests SET is_probe = true WHERE room_name = ${"room-1"} AND is_probe = false AND (${null}::text IS NULL OR tenant_id = ${null})`,
    );
    expect(room).toMatch(/requests\w*_room_name_idx/);
    // And the indexes are partial: a lookup of the rows without a session cannot use them.
    expect(await planWithoutSeqScan(db, sql`SELECT id FROM requests WHERE session_id IS NULL`)).not.toMatch(SESSION_IDX);
  });
});
