import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { LK_KEY, LK_SECRET, signBody } from "./support.js";

const KEY = "ops-key-shutdown-0123456789";
const ROOT = resolve(import.meta.dirname, "../..");

/** A real `voxgate serve` process: SIGTERM must drain the observation queue before exit. */
describe("voxgate serve drains call observations on SIGTERM", () => {
  let testDb: TestDatabase;
  let home: string;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    home = mkdtempSync(join(tmpdir(), "voxgate-calls-"));
    writeFileSync(join(home, "voxgate.yaml"), "# empty: defaults\n");
  });
  afterAll(async () => {
    await testDb.drop();
    rmSync(home, { recursive: true, force: true });
  });

  it("everything answered 202 before SIGTERM is in the database after exit 0", async () => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      // An explicit, empty config: a voxgate.yaml in the checkout must not leak into this test.
      VOXGATE_CONFIG: join(home, "voxgate.yaml"),
      VOXGATE_API_KEY: KEY,
      LIVEKIT_API_KEY: LK_KEY,
      LIVEKIT_API_SECRET: LK_SECRET,
      LOG_LEVEL: "info",
      ...(testDb.url ? { DATABASE_URL: testDb.url } : { VOXGATE_DB_PATH: join(home, "db") }),
    };
    const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "serve", "--port", "0", "--host", "127.0.0.1"], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const lines: string[] = [];
    const port = await new Promise<number>((resolvePort, reject) => {
      if (!child.stdout) return reject(new Error("no stdout"));
      createInterface({ input: child.stdout }).on("line", (line) => {
        lines.push(line);
        const m = /"port":(\d+).*voxgate listening|voxgate listening.*"port":(\d+)/.exec(line);
        if (m) resolvePort(Number(m[1] ?? m[2]));
      });
      exited.then((code) => reject(new Error(`server exited (${code}) before listening`)));
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      const N = 300;
      const posts = Array.from({ length: N }, (_, i) =>
        fetch(`${base}/v1/calls/observations`, {
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ origin: "agent", room_sid: `RM_sigterm_${i}`, legs: [{ participant_sid: `PA_sigterm_${i}`, kind: "SIP" }] }),
        }).then((r) => r.status),
      );
      const statuses = await Promise.all(posts);
      const accepted = statuses.filter((s) => s === 202).length;
      expect(accepted).toBe(N);
      // And the webhook path on the real server, signed as LiveKit signs.
      const raw = JSON.stringify({ event: "room_finished", room: { sid: "RM_sigterm_0", name: "sigterm" }, id: "EV_sigterm", createdAt: "1767225720" });
      const wh = await fetch(`${base}/v1/livekit/webhook`, { method: "POST", headers: { authorization: await signBody(raw), "content-type": "application/webhook+json" }, body: raw });
      expect(wh.status).toBe(200);
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    expect(lines.some((l) => l.includes("call observation queue drained"))).toBe(true);
    if (testDb.url) {
      const res = (await testDb.database.db.execute(sql`select count(*) as n from calls where room_sid like 'RM_sigterm_%'`)) as unknown as { rows: { n: string }[] };
      expect(Number(res.rows[0]?.n)).toBe(300);
      const legs = (await testDb.database.db.execute(sql`select count(*) as n from call_legs where participant_sid like 'PA_sigterm_%'`)) as unknown as { rows: { n: string }[] };
      expect(Number(legs.rows[0]?.n)).toBe(300);
    }
  });
});
