/**
 * bench:webhook — signed LiveKit events/s through `POST /v1/livekit/webhook` (verify + upsert) on a fresh
 * Postgres database, served by a real `voxgate serve` process, with a realistic event mix per call
 * (room_started, 2× participant_joined, 2× track_published, 2× participant_left, room_finished,
 * egress_ended, ~5% replays). Baselines in the same run: the same upserts straight through
 * applyCallUpdate (no HTTP, no verify) at the same concurrency, and verify alone.
 * Target: ≥ 2000 events/s through HTTP.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { sql } from "drizzle-orm";
import { AccessToken } from "livekit-server-sdk";
import pg from "pg";
import { Pool } from "undici";
import { applyCallUpdate } from "../src/calls/upsert.js";
import { CallWriter } from "../src/calls/writer.js";
import { webhookEventSchema, webhookToUpdate } from "../src/calls/webhook-event.js";
import { verifyWebhook } from "../src/calls/webhook-verify.js";
import { openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";

const ROOT = resolve(import.meta.dirname, "..");
const ROOMS = Number(process.env.BENCH_ROOMS ?? 400);
const ROUNDS = 3;
const CONCURRENCY = 16;
const KEY = "APIbenchWebhook";
const SECRET = "bench-webhook-secret-0123456789abcdefghijkl";
const PROBE_TRUNK = "ST_bench_probe";

interface Signed {
  body: string;
  token: string;
}

function roomEvents(tag: string, i: number): object[] {
  const room = `RM_${tag}_${i}`;
  const name = `call-${tag}-${i}`;
  const t = 1767225600 + i;
  const sip = `PA_${tag}_${i}_sip`;
  const agent = `PA_${tag}_${i}_agent`;
  const trunk = i % 10 === 0 ? PROBE_TRUNK : "ST_bench_prod";
  const r = { sid: room, name };
  return [
    { event: "room_started", room: { ...r, emptyTimeout: 300, creationTime: `${t}`, creationTimeMs: `${t}000` }, id: `EV_${room}_1`, createdAt: `${t}` },
    { event: "participant_joined", room: r, participant: { sid: sip, identity: "sip_+15105550100", state: "ACTIVE", joinedAt: `${t + 1}`, joinedAtMs: `${t + 1}123`, kind: "SIP", attributes: { "sip.callID": `SCL_${i}`, "sip.trunkID": trunk, "sip.callStatus": "active" } }, id: `EV_${room}_2`, createdAt: `${t + 1}` },
    { event: "participant_joined", room: r, participant: { sid: agent, identity: "agent-bench", state: "ACTIVE", joinedAt: `${t + 1}`, kind: "AGENT" }, id: `EV_${room}_3`, createdAt: `${t + 1}` },
    { event: "track_published", room: r, participant: { sid: sip, identity: "sip_+15105550100" }, track: { sid: `TR_${room}_a`, source: "MICROPHONE", mimeType: "audio/opus" }, id: `EV_${room}_4`, createdAt: `${t + 2}` },
    { event: "track_published", room: r, participant: { sid: agent, identity: "agent-bench" }, track: { sid: `TR_${room}_b`, source: "MICROPHONE", mimeType: "audio/opus" }, id: `EV_${room}_5`, createdAt: `${t + 2}` },
    { event: "participant_left", room: r, participant: { sid: sip, identity: "sip_+15105550100", state: "DISCONNECTED", kind: "SIP", disconnectReason: "CLIENT_INITIATED", attributes: { "sip.trunkID": trunk, "sip.callStatus": "hangup" } }, id: `EV_${room}_6`, createdAt: `${t + 90}` },
    { event: "participant_left", room: r, participant: { sid: agent, identity: "agent-bench", state: "DISCONNECTED", kind: "AGENT", disconnectReason: "ROOM_CLOSED" }, id: `EV_${room}_7`, createdAt: `${t + 91}` },
    { event: "egress_ended", room: r, egressInfo: { egressId: `EG_${i}`, status: "EGRESS_COMPLETE" }, id: `EV_${room}_8`, createdAt: `${t + 91}` },
    { event: "room_finished", room: r, id: `EV_${room}_9`, createdAt: `${t + 92}` },
  ];
}

/** The events of `rooms` calls, interleaved across calls as a busy server sends them, plus ~5% replays. */
function eventMix(tag: string, rooms: number): object[] {
  const perRoom = Array.from({ length: rooms }, (_, i) => roomEvents(tag, i));
  const out: object[] = [];
  for (let step = 0; step < 9; step++) for (const evs of perRoom) if (evs[step]) out.push(evs[step] as object);
  const replays = out.filter((_, i) => i % 20 === 7);
  return [...out, ...replays];
}

async function sign(events: object[]): Promise<Signed[]> {
  return Promise.all(
    events.map(async (e) => {
      const body = JSON.stringify(e);
      const at = new AccessToken(KEY, SECRET, { ttl: "10m" });
      at.sha256 = createHash("sha256").update(body).digest("base64");
      return { body, token: await at.toJwt() };
    }),
  );
}

async function runConcurrent<T>(items: T[], fn: (item: T) => Promise<void>): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i] as T);
    }),
  );
  return items.length / ((performance.now() - start) / 1000);
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, "127.0.0.1", ok));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}

async function startServer(env: NodeJS.ProcessEnv): Promise<{ baseUrl: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), "--import", "tsx", "src/cli/main.ts", "serve", "--port", String(port), "--host", "127.0.0.1"], {
    cwd: ROOT,
    // warn: no per-request log lines, so logging does not take part in the figure.
    env: { PATH: process.env.PATH, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`voxgate serve exited ${child.exitCode}`);
    const up = await fetch(`${baseUrl}/health`).then((r) => r.ok, () => false);
    if (up) return { baseUrl, child };
    if (i > 300) throw new Error("voxgate serve did not come up in 30 s");
    await new Promise((r) => setTimeout(r, 100));
  }
}

const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });

async function main() {
  const adminUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const dbName = `voxgate_bench_calls_${process.pid}_${randomBytes(3).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const database = await openDatabase({ url: url.toString() });
  await runMigrations(database);
  const home = mkdtempSync(join(tmpdir(), "voxgate-bench-webhook-"));
  writeFileSync(join(home, "voxgate.yaml"), "# bench: defaults\n");
  let server: ChildProcess | null = null;
  try {
    const env = {
      HOME: home,
      VOXGATE_CONFIG: join(home, "voxgate.yaml"),
      DATABASE_URL: url.toString(),
      LIVEKIT_API_KEY: KEY,
      LIVEKIT_API_SECRET: SECRET,
      VOXGATE_LOADTEST_TRUNK_IDS: PROBE_TRUNK,
    };
    const started = await startServer(env);
    server = started.child;
    const pool = new Pool(started.baseUrl, { connections: CONCURRENCY, pipelining: 1 });

    let non200 = 0;
    const post = async (s: Signed) => {
      const res = await pool.request({
        path: "/v1/livekit/webhook",
        method: "POST",
        headers: { authorization: s.token, "content-type": "application/webhook+json" },
        body: s.body,
      });
      await res.body.dump();
      if (res.statusCode !== 200) non200++;
    };
    const trunks = new Set([PROBE_TRUNK]);
    const toUpdates = (signed: Signed[]) =>
      signed.map((s) => {
        const payload = JSON.parse(s.body) as unknown;
        const e = webhookEventSchema.parse(payload);
        return e.event === "egress_ended" ? null : webhookToUpdate(e, payload);
      });
    const writer = new CallWriter(database.db, { loadtestTrunks: trunks });
    await runConcurrent(await sign(eventMix("warm", 50)), post);

    // Interleaved rounds, medians: background load on a shared 2-core machine drifts over time.
    const runs = { http: [] as number[], sql: [] as number[], group: [] as number[], floor: [] as number[] };
    let events = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const [http, direct, grouped] = await Promise.all([
        sign(eventMix(`http${round}`, ROOMS)),
        sign(eventMix(`sql${round}`, ROOMS)),
        sign(eventMix(`grp${round}`, ROOMS)),
      ]);
      events = http.length;
      runs.http.push(await runConcurrent(http, post));
      // Baseline: the same upserts straight in SQL through the shared module, one transaction per event.
      const sqlUpdates = toUpdates(direct);
      runs.sql.push(
        await runConcurrent(sqlUpdates, async (u) => {
          if (u) await applyCallUpdate(database.db, u, { loadtestTrunks: trunks });
        }),
      );
      // The same upserts through the webhook's group-committing writer (no HTTP, no verify).
      const groupUpdates = toUpdates(grouped);
      runs.group.push(
        await runConcurrent(groupUpdates, async (u) => {
          if (u) await writer.write(u);
        }),
      );
      // HTTP floor: signed egress events (verified, parsed, accepted and ignored: no database).
      const egress = await sign(
        Array.from({ length: 2000 }, (_, i) => ({ event: "egress_updated", room: { sid: `RM_eg_${round}_${i}` }, egressInfo: { egressId: `EG_${i}` }, id: `EV_eg_${round}_${i}`, createdAt: "1767225600" })),
      );
      runs.floor.push(await runConcurrent(egress, post));
    }
    if (non200 > 0) throw new Error(`${non200} webhook requests were not 200`);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const httpRate = median(runs.http);
    const sqlRate = median(runs.sql);
    const groupRate = median(runs.group);
    const floorRate = median(runs.floor);

    // Verify alone (one core, no I/O).
    const creds = { apiKey: KEY, apiSecret: SECRET };
    const bytes = (await sign(eventMix("verify", 300))).map((s) => ({ raw: Buffer.from(s.body), token: s.token }));
    const vStart = performance.now();
    for (const b of bytes) await verifyWebhook(b.raw, b.token, creds);
    const verifyRate = bytes.length / ((performance.now() - vStart) / 1000);

    const check = (await database.db.execute(
      sql`select (select count(*) from calls) as calls, (select count(*) from call_legs) as legs,
                 (select count(*) from calls where is_probe) as probe_calls, (select count(*) from call_events) as events`,
    )) as unknown as { rows: Record<string, string>[] };

    console.log(
      `bench:webhook  ${events} signed events per run (${ROOMS} calls × 9 + 5% replays), ${CONCURRENCY} concurrent, ${ROUNDS} interleaved rounds, medians, Postgres, voxgate serve process`,
    );
    console.log(`  HTTP verify + upsert   ${fmt(httpRate)} events/s   (target ≥ 2000)`);
    console.log(`  upserts straight (SQL) ${fmt(sqlRate)} events/s   (baseline)  → HTTP = ${fmt(httpRate / sqlRate, 2)} × baseline`);
    console.log(`  upserts, group commit  ${fmt(groupRate)} events/s   (the webhook's writer, no HTTP) → ${fmt(groupRate / sqlRate, 2)} × per-event`);
    console.log(`  HTTP + verify, no DB   ${fmt(floorRate)} events/s   (egress events, ignored: the HTTP ceiling on this machine)`);
    console.log(`  verify alone           ${fmt(verifyRate)} events/s   (one core)   → HTTP = ${fmt(httpRate / verifyRate, 2)} × verify`);
    console.log(`  rows: ${JSON.stringify(check.rows[0])}  (per round: http ${runs.http.map((x) => fmt(x)).join(", ")}; sql ${runs.sql.map((x) => fmt(x)).join(", ")})`);
    await pool.close();
  } finally {
    server?.kill("SIGTERM");
    await database.close();
    rmSync(home, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

await main();
