import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEnv } from "../../src/config/env.js";
import { parseConfigText } from "../../src/config/load.js";
import { type Database, openDatabase } from "../../src/db/client.js";
import { runMigrations } from "../../src/db/migrate.js";
import { createApp } from "../../src/http/app.js";
import { silentLogger } from "../../src/logging.js";
import { createServices } from "../../src/services.js";
import { record, rows } from "./helpers.js";
import { postgresBinDir, startThrowawayPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

const bin = postgresBinDir();

describe.skipIf(!bin)("a Postgres restart under load (throwaway cluster, never the shared one)", () => {
  let pg: ThrowawayPostgres;
  let database: Database;
  beforeAll(async () => {
    if (!bin) return;
    pg = await startThrowawayPostgres(bin);
    database = await openDatabase({ url: pg.url });
    await runMigrations(database);
  }, 120_000);
  afterAll(async () => {
    await database?.close().catch(() => {});
    pg?.destroy();
  });

  it("answers 503 while Postgres is down, recovers by itself, and loses no acknowledged batch", async () => {
    const services = createServices({ database, config: parseConfigText("", "t.yaml", {}), env: parseEnv({}), log: silentLogger });
    const app = createApp(services);
    const acked: string[] = [];
    const statuses = new Set<number>();
    const post = async () => {
      const batch = Array.from({ length: 50 }, () => record({ id: randomUUID(), session_id: "pg-restart" }));
      const res = await app.request("/v1/ingest", { method: "POST", body: JSON.stringify(batch), headers: { "content-type": "application/json" } });
      statuses.add(res.status);
      if (res.status === 200) acked.push(...batch.map((b) => String(b.id)));
      else {
        const body = (await res.json()) as { error: { code: string } };
        expect(body.error.code).toBe("unavailable");
        expect(res.headers.get("retry-after")).toBeTruthy();
      }
      return res.status;
    };
    let loading = true;
    const load = (async () => {
      while (loading) await post();
    })();
    while (acked.length < 500) await new Promise((r) => setTimeout(r, 5));

    pg.stop();
    // Down: the write path answers 503 (never 500), the process stays up.
    let unavailable = 0;
    for (let i = 0; i < 200 && unavailable < 3; i++) if ((await post()) === 503) unavailable++;
    expect(unavailable).toBe(3);

    pg.start();
    // Back: the same process and pool recover without a restart.
    let recovered = false;
    for (let i = 0; i < 500 && !recovered; i++) {
      recovered = (await post()) === 200;
      if (!recovered) await new Promise((r) => setTimeout(r, 20));
    }
    expect(recovered).toBe(true);
    loading = false;
    await load;

    expect([...statuses].every((s) => s === 200 || s === 503)).toBe(true);
    const [n] = await rows<{ n: number }>(
      database.db,
      sql`SELECT count(*)::int AS n FROM requests WHERE id IN (SELECT json_array_elements_text(${JSON.stringify(acked)}::json)::uuid)`,
    );
    expect(n?.n).toBe(acked.length);
  }, 120_000);
});
