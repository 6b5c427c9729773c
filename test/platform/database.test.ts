import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

/**
 * Postgres compiles a statement with JIT when its estimated cost passes jit_above_cost, and a cached
 * generic plan's estimate grows with the tables: the OTLP receiver's statements crossed it once
 * otlp_spans held a few hundred thousand rows, and paid ~80 ms of compilation per execution
 * (src/db/client.ts, docs/perf/ingest.md "JIT").
 */
describe.skipIf(inject("dbBackend") !== "postgres")("Voxgate's Postgres connections", () => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await createTestDatabase();
  });
  afterAll(async () => {
    await test.drop();
  });

  it("run with JIT off, every pooled connection from its first statement", async () => {
    // Several at once: the pool opens a connection for each.
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => queryRows<{ jit: string; pid: number }>(test.database.db, sql`SELECT current_setting('jit') AS jit, pg_backend_pid() AS pid, pg_sleep(0.05)`)),
    );
    expect(new Set(answers.map(([r]) => r?.pid)).size).toBeGreaterThan(1);
    expect(answers.map(([r]) => r?.jit)).toEqual(Array(6).fill("off"));
  });
});
