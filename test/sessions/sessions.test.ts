import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { sessions } from "../../src/db/schema/index.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { createTestApp, useTestApp } from "../support/app.js";
import { seedRequests } from "../support/seed.js";
import { AUTH_YAML, at, KEYS } from "./seed.js";

/** A request of a session, `minute` minutes after the seed's T0 (an LLM call costing nothing unless said). */
const req = (r: Partial<RequestRow> & { session_id: string; minute: number }): RequestRow => {
  const { minute, ...rest } = r;
  const modality = rest.modality ?? "llm";
  const provider = rest.provider ?? "openai";
  return { id: randomUUID(), ts: at(minute), modality, provider, model_id: `${provider}/m-${modality}`, cost_usd: "0", ...rest };
};

interface Row {
  id: string;
  project: string;
  started_at: string;
  ended_at: string;
  modalities: string[];
  request_count: number;
  total_cost_usd: number;
  tenant_id: string | null;
}

describe("GET /v1/sessions and /v1/sessions/{id}", () => {
  const get = async (path: string, key: string = KEYS.ops) => t.call("GET", path, { key });
  const json = async <T>(path: string, key?: string) => (await (await get(path, key)).json()) as T;

  const t = useTestApp({ yaml: AUTH_YAML });
  beforeAll(async () => {
    // Sessions are what ingest's write path derives from their requests (sessions upsert included):
    // started_at / ended_at are the first and last request, totals and modalities their sums.
    await seedRequests(t.services.database.db, [
      req({ session_id: "acme-1", tenant_id: "acme", project: "support", minute: 1, modality: "stt", provider: "deepgram", cost_usd: "0.01" }),
      req({ session_id: "acme-1", tenant_id: "acme", project: "support", minute: 2, modality: "llm", provider: "openai", cost_usd: "0.02" }),
      req({ session_id: "acme-1", tenant_id: "acme", project: "support", minute: 3, modality: "llm", provider: "openai", cost_usd: "0.03" }),
      req({ session_id: "acme-1", tenant_id: "acme", project: "support", minute: 6, modality: "tts", provider: "elevenlabs", cost_usd: "0.005" }),
      req({ session_id: "acme-2", tenant_id: "acme", project: "sales", minute: 2 }),
      req({ session_id: "acme-3", tenant_id: "acme", project: "support", minute: 3 }),
      req({ session_id: "globex-1", tenant_id: "globex", minute: 4, provider: "groq", cost_usd: "0.5" }),
      req({ session_id: "ops-1", tenant_id: null, minute: 5 }),
    ]);
  });

  it("lists every tenant's sessions newest first for an operator, as an array of session rows", async () => {
    const res = await get("/v1/sessions");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-next-cursor")).toBeNull();
    const rows = (await res.json()) as Row[];
    expect(rows.map((r) => r.id)).toEqual(["ops-1", "globex-1", "acme-3", "acme-2", "acme-1"]);
    const acme1 = rows.find((r) => r.id === "acme-1");
    expect(acme1).toMatchObject({
      project: "support",
      started_at: "2026-11-20T10:01:00.000Z",
      ended_at: "2026-11-20T10:06:00.000Z",
      modalities: ["llm", "stt", "tts"],
      request_count: 4,
      total_cost_usd: 0.065,
      tenant_id: "acme",
    });
  });

  it("confines a tenant-scoped key to its own sessions", async () => {
    const rows = await json<Row[]>("/v1/sessions", KEYS.acme);
    expect(rows.map((r) => r.id)).toEqual(["acme-3", "acme-2", "acme-1"]);
    expect(new Set(rows.map((r) => r.tenant_id))).toEqual(new Set(["acme"]));
    const globex = await json<Row[]>("/v1/sessions", KEYS.globex);
    expect(globex.map((r) => r.id)).toEqual(["globex-1"]);
  });

  it("filters by project and since", async () => {
    expect((await json<Row[]>("/v1/sessions?project=support")).map((r) => r.id)).toEqual(["acme-3", "acme-1"]);
    expect((await json<Row[]>("/v1/sessions?since=2026-11-20T10:03:00Z")).map((r) => r.id)).toEqual(["ops-1", "globex-1", "acme-3"]);
    expect((await json<Row[]>("/v1/sessions?since=2026-11-21")).length).toBe(0);
    expect((await json<Row[]>("/v1/sessions?project=support", KEYS.globex)).length).toBe(0);
    // An empty filter is no filter (dashboards send ?project=).
    expect((await json<Row[]>("/v1/sessions?project=&room=")).length).toBe(5);
  });

  it("pages with a keyset cursor in X-Next-Cursor, with no row twice and none skipped", async () => {
    const seen: string[] = [];
    let path = "/v1/sessions?limit=2";
    for (let i = 0; i < 5; i++) {
      const res = await get(path);
      expect(res.status).toBe(200);
      seen.push(...((await res.json()) as Row[]).map((r) => r.id));
      const next = res.headers.get("x-next-cursor");
      if (!next) break;
      path = `/v1/sessions?limit=2&cursor=${encodeURIComponent(next)}`;
    }
    expect(seen).toEqual(["ops-1", "globex-1", "acme-3", "acme-2", "acme-1"]);
  });

  it("breaks started_at ties by id and keeps microsecond timestamps exact across pages", async () => {
    const extra = await createTestApp({ yaml: AUTH_YAML });
    try {
      const db = extra.services.database.db;
      // 7 sessions at one instant (microsecond precision, as a SQL-generated row would have).
      await db.execute(sql`insert into sessions (id, tenant_id, project, started_at, ended_at)
        select 'tie-' || g, 'acme', 'default', '2026-11-20T10:00:00.123456Z', '2026-11-20T10:05:00Z' from generate_series(1, 7) g`);
      const ids: string[] = [];
      let path = "/v1/sessions?limit=3";
      for (;;) {
        const res = await extra.call("GET", path, { key: KEYS.acme });
        ids.push(...((await res.json()) as Row[]).map((r) => r.id));
        const next = res.headers.get("x-next-cursor");
        if (!next) break;
        path = `/v1/sessions?limit=3&cursor=${next}`;
      }
      expect(ids).toEqual(["tie-7", "tie-6", "tie-5", "tie-4", "tie-3", "tie-2", "tie-1"]);
    } finally {
      await extra.close();
    }
  });

  it("accepts limit at its edges (1, 1000) and refuses past them with 422", async () => {
    expect((await json<Row[]>("/v1/sessions?limit=1")).length).toBe(1);
    expect((await get("/v1/sessions?limit=1000")).status).toBe(200);
    for (const bad of ["0", "1001", "-1", "abc", "1.5", "", "99999999999999999999"]) {
      const res = await get(`/v1/sessions?limit=${bad}`);
      expect(res.status, `limit=${bad}`).toBe(422);
      const body = (await res.json()) as { error: { code: string; details: { path: string }[] } };
      expect(body.error.code).toBe("validation_failed");
      expect(body.error.details[0]?.path).toBe("limit");
    }
  });

  it("refuses bad cursors and bad since with 422", async () => {
    for (const bad of ["garbage!", "Zm9v", Buffer.from("123:").toString("base64url"), "%00"]) {
      const res = await get(`/v1/sessions?cursor=${bad}`);
      expect(res.status, `cursor=${bad}`).toBe(422);
    }
    expect((await get("/v1/sessions?since=yesterday")).status).toBe(422);
    expect((await get("/v1/sessions?cursor=&since=")).status).toBe(200);
    expect((await get("/v1/sessions?since=2026-13-40")).status).toBe(422);
  });

  it("returns the detail with by_modality and providers from the requests table", async () => {
    const res = await get("/v1/sessions/acme-1", KEYS.acme);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Row & { by_modality: Record<string, unknown>; providers: string[] };
    expect(body.id).toBe("acme-1");
    expect(body.tenant_id).toBe("acme");
    expect(body.by_modality).toEqual({
      llm: { cost: 0.05, request_count: 2 },
      stt: { cost: 0.01, request_count: 1 },
      tts: { cost: 0.005, request_count: 1 },
    });
    expect(body.providers).toEqual(["deepgram", "elevenlabs", "openai"]);
  });

  it("answers another tenant's id exactly like a missing one (404, identical body)", async () => {
    const other = await get("/v1/sessions/globex-1", KEYS.acme);
    const missing = await get("/v1/sessions/no-such-session", KEYS.acme);
    expect(other.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(await other.text()).toBe(await missing.text());
    expect((await get("/v1/sessions/globex-1", KEYS.globex)).status).toBe(200);
    expect((await get("/v1/sessions/acme-1", KEYS.reader)).status).toBe(200);
  });

  it("answers SQL metacharacters, encoded slashes, NUL and overlong ids with 404 and changes nothing", async () => {
    const count = async () => (await t.services.database.db.select({ n: sql<number>`count(*)::int` }).from(sessions))[0]?.n;
    const before = await count();
    for (const id of ["'%20OR%201%3D1%20--", "acme-1'%3B%20DROP%20TABLE%20sessions%3B--", "a%2Fb", "..%2F..%2Fetc", "%00", "acme-1%00", "x".repeat(600), "%E0%A4%A"]) {
      const res = await get(`/v1/sessions/${id}`);
      expect([404], `id ${id.slice(0, 40)}`).toContain(res.status);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
    }
    expect(await count()).toBe(before);
  });

  it("needs a read key: 401 without one, 403 for an ingest-only key", async () => {
    expect((await t.call("GET", "/v1/sessions")).status).toBe(401);
    expect((await t.call("GET", "/v1/sessions/acme-1")).status).toBe(401);
    expect((await get("/v1/sessions", KEYS.ingestOnly)).status).toBe(403);
    expect((await get("/v1/sessions", "wrong-key")).status).toBe(401);
  });

  it("answers [] (and 404 for ids) when cost tracking is disabled", async () => {
    const off = await createTestApp({ yaml: `${AUTH_YAML}\ncost_tracking: { enabled: false }\n` });
    try {
      await seedRequests(off.services.database.db, [req({ session_id: "s-off", tenant_id: null, minute: 1 })]);
      const res = await off.call("GET", "/v1/sessions", { key: KEYS.ops });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual([]);
      expect((await off.call("GET", "/v1/sessions/s-off", { key: KEYS.ops })).status).toBe(404);
      expect((await off.call("GET", "/api/sessions", { key: KEYS.ops })).status).toBe(200);
    } finally {
      await off.close();
    }
  });
});
