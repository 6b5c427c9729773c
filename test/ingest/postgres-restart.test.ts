import { randomUUID } from "node:crypto";
import pg from "pg";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CollectorProcess, spawnCollector } from "./collector-process.js";
import { record } from "./helpers.js";
import { postgresBinDir, startThrowawayPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

const bin = postgresBinDir();
const KEY = "pg-restart-key-0123456789";

if (!bin) {
  process.stderr.write("postgres-restart.test.ts: skipped: no /usr/lib/postgresql/*/bin/initdb and pg_ctl on this machine\n");
}

describe.skipIf(!bin)("a Postgres restart under load (a throwaway cluster of our own, never the shared one)", () => {
  let cluster: ThrowawayPostgres;
  let collector: CollectorProcess;
  beforeAll(async () => {
    if (!bin) return;
    cluster = await startThrowawayPostgres(bin);
    collector = await spawnCollector(cluster.url, { VOXGATE_API_KEY: KEY });
  }, 120_000);
  afterAll(async () => {
    await collector?.stop();
    cluster?.destroy();
  });

  it("answers 503 while Postgres is down, recovers by itself, and loses no acknowledged batch", async () => {
    const acked: string[] = [];
    const statuses = new Set<number>();
    const post = async (): Promise<number> => {
      const batch = Array.from({ length: 50 }, () => record({ id: randomUUID(), session_id: "pg-restart" }));
      const res = await request(`${collector.url}/v1/ingest`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify(batch),
      });
      const body = (await res.body.json()) as { error?: { code: string } };
      statuses.add(res.statusCode);
      if (res.statusCode === 200) acked.push(...batch.map((b) => String(b.id)));
      else {
        expect(body.error?.code).toBe("unavailable");
        expect(res.headers["retry-after"]).toBeTruthy();
      }
      return res.statusCode;
    };
    let loading = true;
    const load = (async () => {
      while (loading) await post();
    })();
    while (acked.length < 500) await new Promise((r) => setTimeout(r, 5));

    cluster.stop();
    // Down: the write path answers 503 (never 500) and the process stays up.
    let unavailable = 0;
    for (let i = 0; i < 200 && unavailable < 3; i++) if ((await post()) === 503) unavailable++;
    expect(unavailable).toBe(3);
    expect(collector.child.exitCode).toBeNull();

    cluster.start();
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
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM requests WHERE id = ANY($1::uuid[])",
      [acked],
    );
    await client.end();
    expect(rows[0]?.n).toBe(acked.length);
  }, 120_000);
});
