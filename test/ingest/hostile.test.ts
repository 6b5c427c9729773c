import { gzipSync } from "node:zlib";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { ACME, AUTH_YAML, GLOBEX, OPS, record, rows } from "./helpers.js";

const WRITE_ROUTES = ["/v1/ingest", "/v1/ingest/turns", "/v1/ingest/dead-air", "/v1/agents/heartbeat"];
const TABLES = ["requests", "sessions", "turns", "dead_air_events", "agent_presence", "room_sequences"];
const FIELDS = [
  "id", "timestamp", "modality", "model_id", "status", "provider", "project", "session_id", "room_name", "cost_usd",
  "input_tokens", "audio_seconds", "characters", "input_units", "metadata", "turn_index", "caller_speak_start_ms",
  "caller_speak_end_ms", "response_speed_ms", "started_at_ms", "duration_ms", "threshold_used_ms", "agent_id",
  "status", "active_sessions", "cpu_pct", "memory_rss_bytes", "ts", "tenant_id",
];

/** A small seeded PRNG (mulberry32) so a failing fuzz case can be replayed. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomValue(rand: () => number, depth = 0): unknown {
  const pick = Math.floor(rand() * 12);
  switch (pick) {
    case 0: return null;
    case 1: return rand() < 0.5;
    case 2: return Math.floor(rand() * 2 ** 53) * (rand() < 0.3 ? -1 : 1);
    case 3: return rand() * 1e300;
    case 4: return -rand() * 1e15;
    case 5: return "x".repeat(Math.floor(rand() * 5000));
    case 6: return "\u0000\ud7ff\u{1F600}'\"; DROP TABLE requests; --";
    case 7: return new Date(rand() * 8.64e15).toISOString();
    case 8: return depth < 4 ? Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1)) : 1;
    case 9: return depth < 4 ? randomObject(rand, depth + 1) : "deep";
    case 10: return Date.now() * (rand() < 0.5 ? 1000 : 0.001);
    default: return crypto.randomUUID();
  }
}

function randomObject(rand: () => number, depth = 0): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  const n = Math.floor(rand() * 10);
  for (let i = 0; i < n; i++) o[FIELDS[Math.floor(rand() * FIELDS.length)] ?? "k"] = randomValue(rand, depth);
  return o;
}

describe("hostile input on every write route", () => {
  const t = useTestApp({ yaml: AUTH_YAML });
  const db = () => t.services.database.db;
  const counts = async () => {
    const out: Record<string, number> = {};
    for (const table of TABLES) {
      const [r] = await rows<{ n: number }>(db(), sql.raw(`SELECT count(*)::int AS n FROM ${table}`));
      out[table] = r?.n ?? 0;
    }
    return out;
  };
  const raw = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
    t.call("POST", path, { key: ACME, raw: body, headers: { "content-type": "application/json", ...headers } });
  const alive = async () => expect((await t.call("GET", "/health")).status).toBe(200);

  it("malformed bodies are 4xx in the envelope and write nothing", async () => {
    const before = await counts();
    const bodies: [string, string | Uint8Array, Record<string, string>?][] = [
      ["not json", "{{{"],
      ["NaN", "[NaN]"],
      ["Infinity", '[{"cost_usd": Infinity}]'],
      ["trailing garbage", "[] []"],
      ["empty", ""],
      ["deep nesting", `${"[".repeat(100_000)}${"]".repeat(100_000)}`],
      ["deep object", `${'{"a":'.repeat(50_000)}1${"}".repeat(50_000)}`],
      ["deep metadata", JSON.stringify([record({ metadata: JSON.parse(`${'{"a":'.repeat(40)}1${"}".repeat(40)}`) })])],
      ["invalid utf-8", new Uint8Array([0x5b, 0x22, 0xff, 0xfe, 0x22, 0x5d])],
      ["10k elements", JSON.stringify(Array.from({ length: 10_000 }, () => ({})))],
      ["huge body", `[${JSON.stringify("x".repeat(9 * 1024 * 1024))}]`],
      ["gzip bomb", gzipSync(Buffer.from(`[${" ".repeat(64 * 1024 * 1024)}]`)), { "content-encoding": "gzip" }],
      ["bad gzip", new Uint8Array([0x1f, 0x8b, 1, 2, 3]), { "content-encoding": "gzip" }],
      ["brotli", "[]", { "content-encoding": "br" }],
    ];
    for (const path of WRITE_ROUTES) {
      for (const [name, body, headers] of bodies) {
        const res = await raw(path, body, headers);
        expect(res.status, `${path} ${name}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${path} ${name}`).toBeLessThan(500);
        const err = (await res.json()) as { error?: { code?: string } };
        expect(typeof err.error?.code, `${path} ${name}`).toBe("string");
      }
    }
    await alive();
    expect(await counts()).toEqual(before);
  });

  it("wrong types, NaN-like strings, negative and far-future timestamps are skipped or refused, never stored", async () => {
    const before = await counts();
    const future = Date.now() + 365 * 24 * 3600 * 1000;
    const records = [
      record({ timestamp: -1 }),
      record({ timestamp: future }),
      record({ timestamp: new Date(future).toISOString() }),
      record({ timestamp: "NaN" }),
      record({ timestamp: 8.64e15 * 10 }),
      record({ cost_usd: "NaN" }),
      record({ input_tokens: 1e300 }),
      record({ ttfb_ms: -5 }),
      record({ project: "p".repeat(100_000) }),
      record({ metadata: "not an object" }),
      record({ metadata: { blob: "m".repeat(100_000) } }),
    ];
    const res = await t.call("POST", "/v1/ingest", { key: ACME, body: records });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ accepted: 0, skipped: records.length });
    const turns = await t.call("POST", "/v1/ingest/turns", {
      key: ACME,
      body: [
        { session_id: "s", turn_index: -1, caller_speak_start_ms: Date.now(), caller_speak_end_ms: Date.now() },
        { session_id: "s", turn_index: 1, caller_speak_start_ms: -Date.now(), caller_speak_end_ms: Date.now() },
        { session_id: "s", turn_index: 2, caller_speak_start_ms: 4e12, caller_speak_end_ms: 4.1e12 },
        { session_id: 7, turn_index: 3, caller_speak_start_ms: Date.now(), caller_speak_end_ms: Date.now() },
        { session_id: "s", turn_index: 2 ** 40, caller_speak_start_ms: Date.now(), caller_speak_end_ms: Date.now() },
      ],
    });
    expect(await turns.json()).toMatchObject({ accepted: 0, skipped: 5 });
    const da = await t.call("POST", "/v1/ingest/dead-air", {
      key: ACME,
      body: [{ session_id: "s", started_at_ms: Date.now(), duration_ms: 2 ** 33, threshold_used_ms: 1 }],
    });
    expect(await da.json()).toMatchObject({ accepted: 0, skipped: 1 });
    expect(await counts()).toEqual(before);
  });

  it("random JSON (seeded) never makes a 5xx and the server stays up", async () => {
    const rand = prng(20261122);
    for (let round = 0; round < Number(process.env.FUZZ_ROUNDS ?? 60); round++) {
      const path = WRITE_ROUTES[round % WRITE_ROUTES.length] ?? "/v1/ingest";
      const body = rand() < 0.8 ? Array.from({ length: Math.floor(rand() * 30) }, () => randomObject(rand)) : randomValue(rand);
      const res = await t.call("POST", path, { key: ACME, body });
      expect(res.status, `round ${round} ${path}`).toBeLessThan(500);
    }
    await alive();
  });

  it("valid rows with one to three fields replaced by random values (seeded) never make a 5xx", async () => {
    const rand = prng(7_340_033);
    const now = Date.now();
    const valid: Record<string, () => Record<string, unknown>> = {
      "/v1/ingest": () => record({ session_id: "fz", room_name: "fz-room", metadata: { a: 1 } }),
      "/v1/ingest/turns": () => ({ session_id: "fz", turn_index: Math.floor(rand() * 1e6), caller_speak_start_ms: now, caller_speak_end_ms: now + 5, room_name: "fz-room" }),
      "/v1/ingest/dead-air": () => ({ session_id: "fz", started_at_ms: now - Math.floor(rand() * 1e6), duration_ms: 5, threshold_used_ms: 2 }),
      "/v1/agents/heartbeat": () => ({ agent_id: "fz", status: "idle", active_sessions: 1, ts: now }),
    };
    for (let round = 0; round < Number(process.env.FUZZ_ROUNDS ?? 60); round++) {
      const path = WRITE_ROUTES[round % WRITE_ROUTES.length] ?? "/v1/ingest";
      const make: () => Record<string, unknown> = valid[path] ?? (() => ({}));
      const mutate = () => {
        const row = make();
        const keys = Object.keys(row);
        for (let m = 0; m < 1 + Math.floor(rand() * 3); m++) row[keys[Math.floor(rand() * keys.length)] ?? "id"] = randomValue(rand);
        return row;
      };
      const body = path === "/v1/agents/heartbeat" ? mutate() : Array.from({ length: 1 + Math.floor(rand() * 20) }, mutate);
      const res = await t.call("POST", path, { key: ACME, body });
      expect(res.status, `round ${round} ${path} ${JSON.stringify(body).slice(0, 300)}`).toBeLessThan(500);
    }
    await alive();
  });
});

describe("cross-tenant writes: a key of tenant A never creates or changes a row of tenant B", () => {
  const t = useTestApp({ yaml: AUTH_YAML });
  const db = () => t.services.database.db;
  const snapshotOf = async (tenant: string) => {
    const out: Record<string, unknown[]> = {};
    for (const table of TABLES) {
      out[table] = await rows(db(), sql`SELECT * FROM ${sql.identifier(table)} WHERE tenant_id = ${tenant} ORDER BY 1`);
    }
    return out;
  };

  it("through ingest, turns, dead-air and heartbeat, with a static key and a minted vk_ key", async () => {
    const now = Date.now();
    const theirs = record({ session_id: "g-session", room_name: null, cost_usd: 1 });
    await t.call("POST", "/v1/ingest", { key: GLOBEX, body: [theirs] });
    await t.call("POST", "/v1/ingest/turns", {
      key: GLOBEX,
      body: [{ session_id: "g-session", turn_index: 0, caller_speak_start_ms: now, caller_speak_end_ms: now + 1 }],
    });
    await t.call("POST", "/v1/ingest/dead-air", {
      key: GLOBEX,
      body: [{ session_id: "g-session", started_at_ms: now, duration_ms: 5, threshold_used_ms: 2 }],
    });
    await t.call("POST", "/v1/agents/heartbeat", { key: GLOBEX, body: { agent_id: "g-agent", status: "idle" } });
    const before = await snapshotOf("globex");

    const minted = (await (await t.call("POST", "/v1/api-keys", { key: OPS, body: { name: "acme vk", tenant_id: "acme" } })).json()) as {
      plaintext: string;
    };
    for (const key of [ACME, minted.plaintext]) {
      const hostile = { tenant_id: "globex" };
      await t.call("POST", "/v1/ingest", {
        key,
        body: [
          { ...theirs, ...hostile, cost_usd: 999 },
          record({ ...hostile, session_id: "g-session", room_name: "hijack", project: "stolen", cost_usd: 50 }),
        ],
      });
      await t.call("POST", "/v1/ingest/turns", {
        key,
        body: [
          { ...hostile, session_id: "g-session", turn_index: 0, caller_speak_start_ms: now, caller_speak_end_ms: now + 9, room_name: "hijack" },
          { ...hostile, session_id: "g-session", turn_index: 1, caller_speak_start_ms: now, caller_speak_end_ms: now + 9, room_name: "hijack" },
        ],
      });
      await t.call("POST", "/v1/ingest/dead-air", {
        key,
        body: [{ ...hostile, session_id: "g-session", started_at_ms: now, duration_ms: 99, threshold_used_ms: 9, room_name: "hijack" }],
      });
      const hb = await t.call("POST", "/v1/agents/heartbeat", { key, body: { ...hostile, agent_id: "g-agent", status: "busy", host: "evil" } });
      expect(hb.status).toBe(202);
    }
    expect(await snapshotOf("globex")).toEqual(before);
    // Ids are unique per tenant: globex's request id sent by acme is acme's own record (once, both keys
    // being acme's), plus one fresh record per key.
    const [acmeRows] = await rows<{ n: number }>(db(), sql`SELECT count(*)::int AS n FROM requests WHERE tenant_id = 'acme'`);
    expect(acmeRows?.n).toBe(3);
  });
});

describe("text Postgres cannot store (NUL, lone surrogates)", () => {
  const t = useTestApp({ yaml: AUTH_YAML });

  it("is skipped per row or refused, never a 500, on every write route", async () => {
    const now = Date.now();
    for (const bad of ["a\u0000b", "x\ud800y", "\udc00"]) {
      const ingest = await t.call("POST", "/v1/ingest", {
        key: ACME,
        body: [record({ project: bad }), record({ metadata: { note: bad } }), record({ metadata: { [bad]: 1 } }), record()],
      });
      expect(ingest.status).toBe(200);
      expect(await ingest.json()).toMatchObject({ accepted: 1, skipped: 3 });
      const turns = await t.call("POST", "/v1/ingest/turns", {
        key: ACME,
        body: [{ session_id: bad, turn_index: 0, caller_speak_start_ms: now, caller_speak_end_ms: now }],
      });
      expect(await turns.json()).toMatchObject({ accepted: 0, skipped: 1 });
      const da = await t.call("POST", "/v1/ingest/dead-air", {
        key: ACME,
        body: [{ session_id: "s", room_name: bad, started_at_ms: now, duration_ms: 1, threshold_used_ms: 1 }],
      });
      expect(await da.json()).toMatchObject({ accepted: 0, skipped: 1 });
      expect((await t.call("POST", "/v1/agents/heartbeat", { key: ACME, body: { agent_id: "a", host: bad } })).status).toBe(422);
    }
  });
});
