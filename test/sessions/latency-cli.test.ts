import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { summarizeSamples } from "../../src/stats/summary.js";
import { useTestApp } from "../support/app.js";
import { seedRequests } from "../support/seed.js";
import { AUTH_YAML, at, insertProbeCall, insertTurn, KEYS, sessionRequest } from "./seed.js";

const run = promisify(execFile);

describe("voxgate latency (CLI report)", () => {
  const home = mkdtempSync(join(tmpdir(), "voxgate-latency-"));
  const cli = async (...args: string[]) => {
    const url = t.testDb.url;
    if (!url) throw new Error("needs Postgres");
    try {
      const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/cli/main.ts", "latency", ...args], {
        env: { PATH: process.env.PATH, HOME: home, DATABASE_URL: url, LOG_LEVEL: "silent" },
        cwd: process.cwd(),
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  const t = useTestApp({ yaml: AUTH_YAML });
  beforeAll(async () => {
    const db = t.services.database.db;
    // Sessions are what ingest's write path makes of their requests: s1 names room-a in its requests,
    // s2 takes room-b from its turns stored first.
    await insertTurn(db, { sessionId: "s1", tenantId: "acme", turnIndex: 0, seq: 1, responseSpeedMs: 800 });
    await insertTurn(db, { sessionId: "s1", tenantId: "acme", turnIndex: 1, seq: 2, responseSpeedMs: 1100 });
    await insertTurn(db, { sessionId: "s2", tenantId: "globex", roomName: "room-b", turnIndex: 0, seq: 1, responseSpeedMs: 650 });
    await insertTurn(db, { sessionId: "s2", tenantId: "globex", roomName: "room-b", turnIndex: 1, seq: 2, responseSpeedMs: null });
    await seedRequests(db, [
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "stt", provider: "deepgram", costUsd: "0", ttfbMs: 110, minute: 1 }),
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "llm", provider: "openai", costUsd: "0", ttfbMs: 420, minute: 1 }),
      sessionRequest({ sessionId: "s2", tenantId: "globex", modality: "llm", provider: "openai", costUsd: "0", ttfbMs: 380, minute: 30 }),
      sessionRequest({ sessionId: "s2", tenantId: "globex", modality: "llm", provider: "openai", costUsd: "0", ttfbMs: 9999, isProbe: true, minute: 2 }),
      sessionRequest({ sessionId: "s2", tenantId: "globex", modality: "tts", provider: "cartesia", costUsd: "0", ttfbMs: 9999, status: "error", minute: 2 }),
    ]);
    // A probe room: its turns stay out of the store-wide response speed (its request is marked probe on write).
    await insertProbeCall(db, "room-probe");
    await insertTurn(db, { sessionId: "p1", tenantId: "acme", turnIndex: 0, seq: 1, responseSpeedMs: 7000 });
    await seedRequests(db, [sessionRequest({ sessionId: "p1", tenantId: "acme", roomName: "room-probe", modality: "llm", provider: "openai", costUsd: "0", ttfbMs: null, minute: 3 })]);
  });

  it("reports store-wide response speed and per-modality TTFB with the shared summary routine", async () => {
    const r = await cli("--json");
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(report.e2e_ms).toEqual(summarizeSamples([800, 1100, 650]));
    expect(report.ttfb_ms).toEqual({ stt: summarizeSamples([110]), llm: summarizeSamples([420, 380]), tts: null });
  });

  it("narrows by --since", async () => {
    const report = JSON.parse((await cli("--json", "--since", at(10).toISOString())).stdout) as { ttfb_ms: Record<string, unknown> };
    expect(report.ttfb_ms).toEqual({ stt: null, llm: summarizeSamples([380]), tts: null });
  });

  it("--room gives exactly the aggregates of GET /v1/rooms/{room}/latency", async () => {
    const report = JSON.parse((await cli("--json", "--room", "room-a")).stdout) as Record<string, unknown>;
    const api = (await (await t.call("GET", "/v1/rooms/room-a/latency", { key: KEYS.ops })).json()) as {
      e2e_ms: unknown;
      components: Record<string, unknown>;
    };
    expect(report.e2e_ms).toEqual(api.e2e_ms);
    expect(report.ttfb_ms).toEqual({ stt: api.components.stt_ttfb_ms, llm: api.components.llm_ttfb_ms, tts: api.components.tts_ttfb_ms });
    expect(report.dead_air_ms).toEqual(api.components.dead_air_ms);
  });

  it("prints a readable table by default, and fails clearly on bad input", async () => {
    const table = await cli();
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/response speed \(e2e\)\s+3\s/);
    expect(table.stdout).toMatch(/tts ttfb\s+-/);
    expect((await cli("--room", "nope")).code).toBe(1);
    const badSince = await cli("--since", "yesterday");
    expect(badSince.code).not.toBe(0);
    expect(badSince.stderr).toContain("--since");
  }, 120_000); // three CLI processes (tsx start ~10 s each on a loaded machine)
});
