import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { fleetIndex } from "../../src/fleet/index-queries.js";
import { storeRequestRows } from "../support/seed.js";
import { storeTurns } from "../../src/ingest/turns.js";
import { formatMoney, moneyNumber, parseMoney } from "../../src/money.js";
import { queryRows } from "../../src/reports/sources.js";
import type { Period } from "../../src/reports/window.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { adjustRollupMoney, rollupSourceColumns } from "../../src/rollups/adjust.js";
import { rebuildRollups } from "../../src/rollups/rebuild.js";
import { decodeCachedSketch, sketchFromJson } from "../../src/rollups/sketch-json.js";
import { summarize, summarizeSamples } from "../../src/stats/summary.js";
import { useTestApp } from "../support/app.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** How far back the rows go: long enough to hold three month starts, so one month has ≤ 30 days. */
const SPAN_DAYS = 100;

/** A `now` whose rolling 30-day window is one whole calendar month (read from the monthly rollups). */
function wholeMonthNow(base: number): Date {
  for (let m = 0; m < 4; m++) {
    const d = new Date(base - SPAN_DAYS * DAY);
    const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1 + m, 1);
    const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 2 + m, 1);
    if (next - start <= 30 * DAY) return new Date(start + 30 * DAY);
  }
  throw new Error("no month of 30 days or fewer in four");
}

function lcg(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

const TENANTS = [null, "acme", "globex"] as const;
const AGENTS = ["agent-1", "agent-2", "agent-3", "agent-4"];
const MODALITIES = [
  ["openai/gpt-4.1-mini", "llm"],
  ["deepgram/nova-3", "stt"],
  ["cartesia/sonic", "tts"],
] as const;

/** Heartbeats: agents with traffic, one only heard by heartbeat per tenant scope, a stale one; offsets from base. */
const PRESENCE = [
  { tenantId: null, agentId: "agent-1", agoMs: 10_000 },
  { tenantId: "acme", agentId: "agent-2", agoMs: 2 * 3_600_000 },
  { tenantId: "globex", agentId: "agent-5", agoMs: 5_000 },
  { tenantId: null, agentId: "agent-6", agoMs: 20_000 },
] as const;

interface Turn {
  tenantId: string | null;
  agentId: string;
  sessionId: string;
  startMs: number;
  speed: number | null;
  probe: boolean;
}

/**
 * The fleet index served from the per-agent rollups equals the same figures computed from the raw
 * rows, for every period and several `now`s (edges inside hours, on hours, on days); and a rebuild
 * from raw rows reproduces what the write path maintained.
 */
describe("fleet index rollups equal raw aggregates", () => {
  const base = Math.floor(Date.now() / HOUR) * HOUR + 23 * 60_000 + 457;
  const reqs: RequestRow[] = [];
  const turns: Turn[] = [];
  const t = useTestApp();
  beforeAll(async () => {
    const db = t.services.database.db;
    // A probe call (the operator's load-test trunk): its room's turns are probe traffic.
    await db.execute(sql`INSERT INTO calls (room_sid, room_name, is_probe) VALUES ('RM_probe', 'probe-room', true)`);
    for (const p of PRESENCE) {
      await db.execute(sql`INSERT INTO agent_presence (tenant_id, agent_id, last_seen_at)
        VALUES (${p.tenantId}, ${p.agentId}, ${new Date(base - p.agoMs).toISOString()}::timestamptz)`);
    }
    const rnd = lcg(7);
    const sessionOwner = new Map<string, { tenantId: string | null; agentId: string }>();
    for (let i = 0; i < 700; i++) {
      const [modelId, modality] = MODALITIES[Math.floor(rnd() * 3)] ?? MODALITIES[0];
      const tenantId = TENANTS[Math.floor(rnd() * 3)] ?? null;
      const noAgent = rnd() < 0.1;
      const agentId = AGENTS[Math.floor(rnd() * AGENTS.length)] ?? "agent-1";
      const sessionId = rnd() < 0.5 ? `s-${tenantId ?? "op"}-${agentId}-${Math.floor(rnd() * 6)}` : null;
      if (sessionId && !noAgent) sessionOwner.set(sessionId, { tenantId, agentId });
      reqs.push({
        id: randomUUID(),
        ts: new Date(base - Math.floor(rnd() * SPAN_DAYS * DAY)),
        tenant_id: tenantId,
        agent_id: noAgent ? null : agentId,
        session_id: noAgent ? null : sessionId,
        model_id: modelId,
        modality,
        provider: modelId.split("/")[0] ?? "x",
        status: rnd() < 0.1 ? "error" : "success",
        cost_usd: rnd() < 0.1 ? null : (rnd() * 3).toFixed(10),
        rated_price_usd: (rnd() * 4).toFixed(10),
        ttfb_ms: rnd() < 0.1 ? null : Math.round(50 + rnd() * 900),
        is_probe: rnd() < 0.15,
      });
    }
    // An agent whose one row is an hour before base: for the nows before it (same month), it is not in
    // the window, though the month bucket holds it (period=all ranks from month buckets minus later rows).
    reqs.push({
      id: randomUUID(),
      ts: new Date(base - HOUR),
      tenant_id: "acme",
      agent_id: "agent-7",
      session_id: null,
      model_id: "openai/gpt-4.1-mini",
      modality: "llm",
      provider: "openai",
      status: "success",
      cost_usd: "9.0000000000",
      rated_price_usd: "9.5000000000",
      ttfb_ms: 300,
      is_probe: false,
    });
    const sessionsList = [...sessionOwner.entries()];
    // Half of the turns arrive before any record names their session's agent, half after.
    const makeTurns = (n: number) => {
      const batchByTenant = new Map<string | null, Record<string, unknown>[]>();
      for (let i = 0; i < n; i++) {
        const [sessionId, owner] = sessionsList[Math.floor(rnd() * sessionsList.length)] ?? ["", { tenantId: null, agentId: "" }];
        const probe = rnd() < 0.2;
        const startMs = base - Math.floor(rnd() * SPAN_DAYS * DAY);
        const speed = rnd() < 0.1 ? null : Math.round(300 + rnd() * 1500);
        const turn = { session_id: sessionId, turn_index: turns.length, caller_speak_start_ms: startMs, caller_speak_end_ms: startMs + 500, response_speed_ms: speed, room_name: probe ? "probe-room" : `room-${sessionId}` };
        turns.push({ tenantId: owner.tenantId, agentId: owner.agentId, sessionId, startMs, speed, probe });
        const list = batchByTenant.get(owner.tenantId) ?? [];
        list.push(turn);
        batchByTenant.set(owner.tenantId, list);
      }
      return batchByTenant;
    };
    for (const [tenant, batch] of makeTurns(150)) await storeTurns(db, tenant, batch);
    for (const tenant of TENANTS) {
      const mine = reqs.filter((r) => (r.tenant_id ?? null) === tenant);
      for (let i = 0; i < mine.length; i += 53) await storeRequestRows(db, tenant, mine.slice(i, i + 53));
    }
    for (const [tenant, batch] of makeTurns(150)) await storeTurns(db, tenant, batch);
  });

  // Edges inside hours, on hours, on days, on a month start, and a rolling month that is a whole month.
  const monthStart = (ms: number) => Date.UTC(new Date(ms).getUTCFullYear(), new Date(ms).getUTCMonth(), 1);
  const nows = () => [
    new Date(base),
    new Date(base - 3.5 * HOUR),
    new Date(Math.floor(base / HOUR) * HOUR),
    new Date(Math.floor(base / DAY) * DAY - 5 * DAY),
    new Date(monthStart(base - 20 * DAY)),
    new Date(monthStart(base - 40 * DAY) + 2.25 * HOUR),
    wholeMonthNow(base),
  ];
  const SPAN: Record<Exclude<Period, "all">, number> = { today: DAY, week: 7 * DAY, month: 30 * DAY };

  /** What the index must say, computed from the raw rows alone. */
  function expected(tenant: string | null | undefined, period: Period, now: Date) {
    const from = period === "all" ? Number.NEGATIVE_INFINITY : now.getTime() - SPAN[period];
    const inWindow = (ms: number) => ms >= from && ms <= now.getTime();
    const key = (tn: string | null, a: string) => `${tn ?? ""}/${a}`;
    const out = new Map<string, { requests: number; probe: number; errors: number; cost: bigint; rated: bigint; ttfb: Record<string, number[]>; turns: number; probeTurns: number; speeds: number[] }>();
    const get = (tn: string | null, a: string) => {
      let e = out.get(key(tn, a));
      if (!e) {
        e = { requests: 0, probe: 0, errors: 0, cost: 0n, rated: 0n, ttfb: { stt: [], llm: [], tts: [] }, turns: 0, probeTurns: 0, speeds: [] };
        out.set(key(tn, a), e);
      }
      return e;
    };
    for (const r of reqs) {
      if (!r.agent_id || !inWindow((r.ts as Date).getTime())) continue;
      if (tenant !== undefined && (r.tenant_id ?? null) !== tenant) continue;
      const e = get(r.tenant_id ?? null, r.agent_id);
      e.requests++;
      e.cost += parseMoney(r.cost_usd);
      e.rated += parseMoney(r.rated_price_usd);
      if (r.is_probe) e.probe++;
      else {
        if (r.status === "error") e.errors++;
        if (r.ttfb_ms !== null && r.ttfb_ms !== undefined) e.ttfb[r.modality]?.push(r.ttfb_ms);
      }
    }
    // Every agent with a heartbeat is listed, whatever its traffic (presence is not windowed).
    for (const p of PRESENCE) if (tenant === undefined || p.tenantId === tenant) get(p.tenantId, p.agentId);
    for (const tu of turns) {
      if (!inWindow(tu.startMs) || (tenant !== undefined && tu.tenantId !== tenant)) continue;
      const e = get(tu.tenantId, tu.agentId);
      if (tu.probe) e.probeTurns++;
      else {
        e.turns++;
        if (tu.speed !== null) e.speeds.push(tu.speed);
      }
    }
    return [...out.entries()]
      .map(([k, e]) => ({
        key: k,
        requests: e.requests,
        probe: { requests: e.probe, turns: e.probeTurns },
        errors: e.errors,
        cost_usd: moneyNumber(formatMoney(e.cost)),
        rated_price_usd: moneyNumber(formatMoney(e.rated)),
        turns: e.turns,
        p95_response_speed_ms: summarizeSamples(e.speeds)?.p95 ?? null,
        p95_ttfb_ms: { stt: summarizeSamples(e.ttfb.stt ?? [])?.p95 ?? null, llm: summarizeSamples(e.ttfb.llm ?? [])?.p95 ?? null, tts: summarizeSamples(e.ttfb.tts ?? [])?.p95 ?? null },
      }))
      .sort((a, b) => (a.key < b.key ? -1 : 1));
  }

  /** Compares the index with the raw figures for every now, period and scope; returns what it saw. */
  async function compareAll() {
    const db = t.services.database.db;
    let compared = 0;
    let turnsSeen = 0;
    let probeTurnsSeen = 0;
    for (const now of nows()) {
      for (const period of ["today", "week", "month", "all"] as const) {
        for (const scope of [null, "acme", "globex"]) {
          const got = await fleetIndex(db, { tenantId: scope, period, limit: 1000, offset: 0, sort: "agent_id", now });
          const actual = got.agents
            .map((a) => ({
              key: `${a.tenant_id ?? ""}/${a.agent_id}`,
              requests: a.requests,
              probe: { requests: a.probe.requests, turns: a.probe.turns },
              errors: a.errors,
              cost_usd: a.cost_usd,
              rated_price_usd: a.rated_price_usd,
              turns: a.turns,
              p95_response_speed_ms: a.p95_response_speed_ms,
              p95_ttfb_ms: a.p95_ttfb_ms,
            }))
            .sort((a, b) => (a.key < b.key ? -1 : 1));
          const want = expected(scope ?? undefined, period, now);
          const label = `${period} ${now.toISOString()} tenant ${scope}`;
          expect(actual, label).toEqual(want);
          expect(got.total_agents, label).toBe(want.length);
          const online = PRESENCE.filter((p) => (scope === null || p.tenantId === scope) && base - p.agoMs > now.getTime() - 45_000);
          expect(got.online, label).toBe(online.length);
          // The ranking: value descending, then agent id, then tenant (no tenant first), one page at a time.
          for (const sort of ["cost", "requests"] as const) {
            const byValue = [...want].sort((a, b) => {
              const d = sort === "cost" ? b.cost_usd - a.cost_usd : b.requests - a.requests;
              const [ta = "", aa = ""] = a.key.split("/");
              const [tb = "", ab = ""] = b.key.split("/");
              return d !== 0 ? d : aa !== ab ? (aa < ab ? -1 : 1) : ta === tb ? 0 : ta < tb ? -1 : 1;
            });
            const pages = await Promise.all(
              [0, 3, 6, 9].map((offset) => fleetIndex(db, { tenantId: scope, period, limit: 3, offset, sort, now })),
            );
            const keys = pages.flatMap((pg) => pg.agents.map((a) => `${a.tenant_id ?? ""}/${a.agent_id}`));
            expect(keys, `${label} sort=${sort}`).toEqual(byValue.slice(0, 12).map((e) => e.key));
          }
          compared += actual.length;
          for (const a of actual) {
            turnsSeen += a.turns;
            probeTurnsSeen += a.probe.turns;
          }
        }
      }
    }
    return { compared, turnsSeen, probeTurnsSeen };
  }

  it("every period, every tenant scope and several nows", async () => {
    const { compared, turnsSeen, probeTurnsSeen } = await compareAll();
    expect(compared).toBeGreaterThan(100);
    expect(turnsSeen).toBeGreaterThan(100);
    expect(probeTurnsSeen).toBeGreaterThan(10);
  });

  it("a span sketch cache that does not decode is merged again, not read as empty", async () => {
    // "gICA": three bytes that each announce another (never a complete value, whatever the count).
    const db = t.services.database.db;
    await compareAll();
    const cols = ["stt_ttfb_hist", "llm_ttfb_hist", "tts_ttfb_hist", "response_hist"];
    const cached = sql.raw(cols.map((c) => `${c} ? 'packed_centis'`).join(" OR "));
    const damage = sql.raw(cols.map((c) => `${c} = CASE WHEN ${c} ? 'packed_centis' THEN jsonb_set(${c}, '{packed_centis}', '"gICA"') ELSE ${c} END`).join(", "));
    const damaged = await queryRows<{ n: string }>(db, sql`WITH d AS (UPDATE fleet_index_agent_checkpoints SET ${damage} WHERE ${cached} RETURNING 1) SELECT count(*) AS n FROM d`);
    expect(Number(damaged[0]?.n)).toBeGreaterThan(10);
    await compareAll();
    const rows = await queryRows<Record<string, unknown>>(db, sql`SELECT ${sql.raw(cols.join(", "))} FROM fleet_index_agent_checkpoints WHERE ${cached}`);
    expect(rows.length).toBeGreaterThan(10);
    for (const r of rows) for (const c of cols) expect(decodeCachedSketch(r[c]), c).not.toBeUndefined();
  });

  it("rebuildRollups reproduces what the write path maintained (per-agent tables)", async () => {
    const db = t.services.database.db;
    // The monthly table keeps sums only: its sketch columns read as NULL here.
    const sketchCols = (table: string) =>
      sql.raw(table.endsWith("_monthly") ? "NULL AS stt_ttfb_hist, NULL AS llm_ttfb_hist, NULL AS tts_ttfb_hist, NULL AS response_hist" : "stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist");
    const snapshot = async (table: string) =>
      (
        await queryRows<Record<string, unknown>>(
          db,
          sql`SELECT bucket, tenant_id, agent_id, requests, probe_requests, errors, cost_usd::text AS cost, rated_price_usd::text AS rated,
            turns, probe_turns, ${sketchCols(table)}
          FROM ${sql.raw(table)} ORDER BY bucket, tenant_id NULLS FIRST, agent_id`,
        )
      ).map(({ stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist, ...rest }) => ({
        ...rest,
        sketches: [stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist].map((h) => {
          const s = summarize(sketchFromJson(h));
          return s && { ...s, avg: 0 };
        }),
      }));
    const tables = ["fleet_index_agent_rollups", "fleet_index_agent_rollups_daily", "fleet_index_agent_rollups_monthly"];
    const before = await Promise.all(tables.map(snapshot));
    expect(before[0]?.length).toBeGreaterThan(100);
    expect(before[2]?.length).toBeGreaterThan(20);
    await rebuildRollups(db, new Date(Math.floor((base - (SPAN_DAYS + 1) * DAY) / DAY) * DAY), new Date(Math.ceil(base / DAY) * DAY + DAY));
    expect(await Promise.all(tables.map(snapshot))).toEqual(before);
    // A rebuild of days inside months rebuilds those months whole (no month bucket is cut in two).
    const mid = Math.floor((base - 45 * DAY) / DAY) * DAY;
    await rebuildRollups(db, new Date(mid), new Date(mid + 3 * DAY));
    const after = await Promise.all(tables.map(snapshot));
    expect(after).toEqual(before);
  });

  it("late rows and turns move the running totals already built (src/rollups/fleet-checkpoints.ts)", async () => {
    const db = t.services.database.db;
    // A comparison builds the checkpoints (the rebuild above dropped them); then rows dated before them
    // arrive, of known agents and of a new one, and turns of sessions that already name their agent.
    await compareAll();
    const built = await queryRows<{ n: string }>(db, sql`SELECT count(*) AS n FROM fleet_index_checkpoints`);
    expect(Number(built[0]?.n)).toBeGreaterThan(3);
    // period=all read closed months' sketches from the month rows' cache (src/fleet/month-sketches.ts);
    // the late rows below land in cached months, whose cache must then not be used.
    const cached = await queryRows<{ n: string }>(db, sql`SELECT count(*) AS n FROM fleet_index_agent_rollups_monthly WHERE sketched_rows IS NOT NULL`);
    expect(Number(cached[0]?.n)).toBeGreaterThan(10);
    const rnd = lcg(99);
    const late: RequestRow[] = [];
    for (let i = 0; i < 120; i++) {
      const [modelId, modality] = MODALITIES[i % 3] ?? MODALITIES[0];
      const tenantId = TENANTS[i % 3] ?? null;
      late.push({
        id: randomUUID(),
        ts: new Date(base - Math.floor((2 + rnd() * 60) * DAY)),
        tenant_id: tenantId,
        agent_id: i % 10 === 0 ? "agent-8" : (AGENTS[i % AGENTS.length] ?? "agent-1"),
        session_id: null,
        model_id: modelId,
        modality,
        provider: modelId.split("/")[0] ?? "x",
        status: "success",
        cost_usd: (rnd() * 5).toFixed(10),
        rated_price_usd: (rnd() * 6).toFixed(10),
        ttfb_ms: Math.round(100 + rnd() * 500),
        is_probe: false,
      });
    }
    for (const tenant of TENANTS) await storeRequestRows(db, tenant, late.filter((r) => (r.tenant_id ?? null) === tenant));
    reqs.push(...late);
    const owned = [...new Map(reqs.filter((r) => r.session_id && r.agent_id).map((r) => [r.session_id, r])).values()].slice(0, 12);
    for (const [i, r] of owned.entries()) {
      const startMs = base - Math.floor((3 + i * 4) * DAY) - i * 1000;
      const sessionId = r.session_id ?? "";
      await storeTurns(db, r.tenant_id ?? null, [
        { session_id: sessionId, turn_index: 10_000 + i, caller_speak_start_ms: startMs, caller_speak_end_ms: startMs + 500, response_speed_ms: 777, room_name: `room-${sessionId}` },
      ]);
      turns.push({ tenantId: r.tenant_id ?? null, agentId: r.agent_id ?? "", sessionId, startMs, speed: 777, probe: false });
    }
    expect((await compareAll()).compared).toBeGreaterThan(100);
  });

  it("re-rating moves the money of every grain (adjustRollupMoney), month buckets included", async () => {
    const db = t.services.database.db;
    // Every fifth request with an agent gets a new price, and a cost where it had none.
    const changed = reqs.filter((r, i) => r.agent_id && i % 5 === 0);
    const values = changed.map((r) => ({ id: r.id, price: "1.2345000000", cost: r.cost_usd ?? "0.5000000000" }));
    const v = sql`(SELECT * FROM json_to_recordset(${JSON.stringify(values)}::json) AS v(id uuid, price numeric, cost numeric))`;
    await db.transaction(async (tx) => {
      await adjustRollupMoney(
        tx,
        sql`SELECT ${rollupSourceColumns("r")}, v.price - coalesce(r.rated_price_usd, 0) AS dp, v.cost - coalesce(r.cost_usd, 0) AS dc
              FROM requests r JOIN ${v} v ON v.id = r.id`,
      );
      await tx.execute(sql`UPDATE requests r SET rated_price_usd = v.price, cost_usd = v.cost FROM ${v} v WHERE v.id = r.id`);
    });
    for (const r of changed) {
      r.rated_price_usd = "1.2345000000";
      r.cost_usd = r.cost_usd ?? "0.5000000000";
    }
    expect(changed.length).toBeGreaterThan(50);
    expect((await compareAll()).compared).toBeGreaterThan(100);
  });
});

/**
 * The SQL rebuild (src/rollups/fleet-index-rebuild.ts) against ingest where sketches leave the exact
 * range: one agent's hour and day hold more than EXACT_SAMPLE_LIMIT TTFBs and response speeds (the
 * bucket counts answer), with zero TTFBs, probe requests, probe turns (a probe call of the turn's
 * tenant) and turns in a room whose probe call belongs to another tenant (not probe). Compares every
 * stored sketch field, not only its summary. Its own database: past the bound the index answers from
 * buckets, which the exact raw comparison above does not expect.
 */
describe("fleet index rollups rebuilt past the exact-sample bound", () => {
  const hour = Math.floor(Date.now() / HOUR) * HOUR - 2 * DAY;
  const t = useTestApp();
  beforeAll(async () => {
    const db = t.services.database.db;
    await db.execute(sql`INSERT INTO calls (room_sid, room_name, tenant_id, is_probe) VALUES
      ('RM_p1', 'probe-acme', 'acme', true), ('RM_p2', 'probe-globex', 'globex', true)`);
    const rnd = lcg(11);
    const reqs: RequestRow[] = [];
    const row = (ts: number, tenant: string | null, modality: "llm" | "stt", probe: boolean, ttfb: number | null, session: string | null): RequestRow => ({
      id: randomUUID(),
      ts: new Date(ts),
      tenant_id: tenant,
      agent_id: "dense",
      session_id: session,
      model_id: modality === "llm" ? "openai/gpt-4.1-mini" : "deepgram/nova-3",
      modality,
      provider: "x",
      status: rnd() < 0.05 ? "error" : "success",
      cost_usd: (rnd() * 2).toFixed(10),
      rated_price_usd: (rnd() * 3).toFixed(10),
      ttfb_ms: ttfb,
      is_probe: probe,
    });
    // acme: 1,100 TTFBs in one hour (some zero, some fractional), 60 probe rows.
    for (let i = 0; i < 1160; i++) {
      const ttfb = i % 97 === 0 ? 0 : i % 13 === 0 ? null : 20 + rnd() * 900;
      reqs.push(row(hour + Math.floor(rnd() * HOUR), "acme", "llm", i >= 1100, ttfb, "dense-s"));
    }
    // No tenant: 1,050 TTFBs over one day, under the bound in every hour, over it in the day.
    for (let i = 0; i < 1050; i++) reqs.push(row(hour - (hour % DAY) + Math.floor(rnd() * DAY), null, "stt", false, Math.round(50 + rnd() * 500), null));
    for (const tenant of ["acme", null]) {
      const mine = reqs.filter((r) => r.tenant_id === tenant);
      for (let i = 0; i < mine.length; i += 400) await storeRequestRows(db, tenant, mine.slice(i, i + 400));
    }
    // 1,020 answered turns in the hour, 30 in the tenant's probe room, 25 in another tenant's probe room.
    const turns = Array.from({ length: 1075 }, (_, i) => {
      const start = hour + Math.floor(rnd() * HOUR);
      const room = i < 1020 ? "room-dense" : i < 1050 ? "probe-acme" : "probe-globex";
      return { session_id: "dense-s", turn_index: i, caller_speak_start_ms: start, caller_speak_end_ms: start + 400, response_speed_ms: i % 50 === 0 ? null : Math.round(200 + rnd() * 1500), room_name: room };
    });
    for (let i = 0; i < turns.length; i += 200) await storeTurns(db, "acme", turns.slice(i, i + 200));
  });

  it("rebuildRollups reproduces every sketch field ingest stored", async () => {
    const db = t.services.database.db;
    const tables = ["fleet_index_agent_rollups", "fleet_index_agent_rollups_daily", "fleet_index_agent_rollups_monthly"];
    const sketch = (h: unknown) => {
      const s = sketchFromJson(h);
      return s.count === 0 ? null : { ...s, sum: Math.round(s.sum * 1e6) / 1e6, samples: s.samples ? [...s.samples].sort((a, b) => a - b) : null };
    };
    const snapshot = async (table: string) =>
      (
        await queryRows<{ tenant_id: string | null; turns: string; probe_turns: string; probe_requests: string } & Record<string, unknown>>(
          db,
          sql`SELECT bucket, tenant_id, agent_id, requests, probe_requests, errors, cost_usd::text AS cost, rated_price_usd::text AS rated, turns, probe_turns,
            ${sql.raw(table.endsWith("_monthly") ? "NULL AS stt_ttfb_hist, NULL AS llm_ttfb_hist, NULL AS tts_ttfb_hist, NULL AS response_hist" : "stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist")}
          FROM ${sql.raw(table)} ORDER BY bucket, tenant_id NULLS FIRST, agent_id`,
        )
      ).map(({ stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist, ...rest }) => ({
        ...rest,
        sketches: [stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist].map(sketch),
      }));
    const before = await Promise.all(tables.map(snapshot));
    // The case is what it claims: the acme hour is past the bound (no raw samples) in TTFB and response speed.
    type Stored = { count: number; zeros: number; samples: number[] | null } | null;
    const sketchesOf = (r: { sketches: unknown } | undefined) => (r?.sketches ?? []) as Stored[];
    const acmeHour = before[0]?.find((r) => r.tenant_id === "acme");
    const [, llm, , response] = sketchesOf(acmeHour);
    expect(llm?.count).toBeGreaterThan(1000);
    expect(llm?.samples).toBeNull();
    expect(llm?.zeros).toBeGreaterThan(5);
    expect(response?.count).toBeGreaterThan(1000);
    expect(response?.samples).toBeNull();
    expect(Number(acmeHour?.probe_turns)).toBe(30);
    expect(Number(acmeHour?.turns)).toBe(1045);
    expect(Number(acmeHour?.probe_requests)).toBe(60);
    const noTenantDay = before[1]?.find((r) => r.tenant_id === null);
    expect(sketchesOf(noTenantDay)[0]?.samples).toBeNull();
    expect(before[0]?.filter((r) => r.tenant_id === null).every((r) => Array.isArray(sketchesOf(r)[0]?.samples))).toBe(true);
    await rebuildRollups(db, new Date(hour - (hour % DAY) - DAY), new Date(hour - (hour % DAY) + 2 * DAY));
    expect(await Promise.all(tables.map(snapshot))).toEqual(before);
  });
});
