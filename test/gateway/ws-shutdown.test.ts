import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/logging.js";
import { boot } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { pseudoAudio } from "../support/stubs/audio.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { OPERATOR_KEY, PROVIDER_KEY } from "./support.js";
import { openWs, opened } from "./ws-support.js";

/** SIGTERM's path (boot().shutdown) with a relayed stream open: it is closed 1001 and its usage recorded. */
const stub = new DeepgramStub();
let db: TestDatabase;

beforeAll(async () => {
  await stub.start();
  db = await createTestDatabase();
});
afterAll(async () => {
  await stub.stop();
  await db.drop();
});

describe("shutdown with open WebSocket streams", () => {
  it("closes client streams with 1001, ends the vendor's, and records their usage before stopping", async (ctx) => {
    if (db.url === null) ctx.skip(); // boot() needs a Postgres URL
    const dir = mkdtempSync(join(tmpdir(), "voxgate-ws-"));
    const config = join(dir, "voxgate.yaml");
    writeFileSync(
      config,
      `auth: { api_keys: [${OPERATOR_KEY}] }
providers:
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
models:
  stt: { deepgram/nova-3: { provider: deepgram, model: nova-3 } }
workers: { enabled: false }
`,
    );
    const running = await boot({ port: 0, host: "127.0.0.1", log: silentLogger, env: { DATABASE_URL: db.url ?? "", VOXGATE_CONFIG: config, HOME: dir } });
    const s = opened(
      await openWs(`ws://127.0.0.1:${running.port}/deepgram/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000`, { headers: { authorization: `Token ${OPERATOR_KEY}` } }),
    );
    s.ws.send(pseudoAudio(32_000)); // 1 s
    while (!s.received.some((m) => String(m).includes("Results"))) await new Promise((r) => setTimeout(r, 5));
    const vendorSide = [...stub.openSockets][0];
    const vendorClosed = new Promise<number>((r) => vendorSide?.once("close", (code) => r(code)));
    await running.shutdown();
    expect((await s.closed).code).toBe(1001);
    expect(await vendorClosed).toBe(1001);
    const id = String(s.headers["x-voxgate-request-id"]);
    const rows = (await db.database.db.execute(sql`SELECT audio_seconds::float8 AS s FROM requests WHERE id = ${id}`)) as unknown as { rows: Array<{ s: number }> };
    expect(rows.rows).toEqual([{ s: 1 }]);
  });
});
