/**
 * bench:otlp: OTLP trace export end to end against `/v1/ingest` in the same run. A `voxgate serve`
 * child (from the TypeScript source through tsx, so it is the code of this tree) on a fresh Postgres
 * database; BENCH_CLIENTS clients (default 16) post, for BENCH_SECONDS each (default 10), in BENCH_ROUNDS
 * rounds (default 3):
 *   - baseline: /v1/ingest batches of 500 request records (JSON), twice: the same records the
 *     receiver maps (each with the metadata src/otlp/map.ts writes: source, trace and span ids, span
 *     name, the STT estimate flag and delay, the TTS audio duration), the target's baseline; and the
 *     same records without metadata (the baseline of the figures before 2026-11-29 16:00);
 *   - OTLP: protobuf batches of at most 512 spans (a BatchSpanProcessor's maxExportBatchSize), the real
 *     SDK's spans and the real serializer: LiveKit voice turns of 12 spans (user_turn, user_speaking,
 *     eou_detection, agent_turn, llm_node, llm_request, llm_request_run, tts_node, tts_request,
 *     tts_request_run, agent_speaking, function_tool) under agent_session spans naming the session,
 *     6 turns a session. Two shapes (BENCH_OTLP_SHAPE):
 *     - `sessions` (the default, the figure docs/PERFORMANCE.md tracks): each batch 7 whole sessions
 *       (511 spans, 42 turns), each with its closing agent_session span: every trace is new, named and
 *       closed within its batch, so nothing is read back from or kept in otlp_spans but the 7 closing
 *       spans. An exporter sends this when its sessions are short and do not overlap: the receiver's
 *       cheapest case.
 *     - `interleaved`: what a BatchSpanProcessor sends for a worker running 20 sessions at once (each
 *       wave's spans in the order they end, cut every 512): a session's spans spread over ~3 batches,
 *       so later batches read its stored spans back and the pairing spans are kept. Each client is
 *       one such worker with its own sessions, sending its batches in order, one at a time (as a
 *       BatchSpanProcessor exports): no two clients' batches share a trace.
 * Prints spans/s, mapped records/s (3 per user turn: STT, LLM, TTS; plus the turn) and the ratio of
 * mapped records/s to ingest records/s, per round and the median: to ingest of the same records (the
 * target, >= 0.5: per mapped record, both legs store the same request rows) and to ingest of records
 * without metadata (cheaper rows than any the receiver writes; shown beside it). The legs: the same
 * clients, each waiting for its answer (a client that gets 429 or 503 waits Retry-After, as an exporter
 * does); ingest's batches of 500 records carry 4 × an export's 126.
 *
 * Why 16 clients: the figure is a capacity, so both legs must keep the 2 cores busy. Four clients did
 * for ingest (~1.45 cores of server + Postgres) but not for OTLP (~1.3: an export's round trips leave
 * the CPU idle between them), and a fleet runs one BatchSpanProcessor per agent process, each with an
 * export in flight: at 16 both legs use ~1.5 cores and the receiver writes the exports that wait
 * together as one batch (src/otlp/write-queue.ts). BENCH_CLIENTS=4 gives the figure of a small fleet.
 *
 * With BENCH_BASE_TREE=<dir> (a checkout of another commit: `git worktree add --detach <dir> <commit>`
 * and a node_modules link; its src/ runs through tsx as this tree's does), a second server from
 * <dir>/src/cli/main.ts on its own fresh database, in the same interleaved rounds (A/B in one run).
 * BENCH_SERVER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") is passed to this tree's server.
 *
 * Each leg's CPU is printed whole and the server's part apart (the rest is its Postgres backends').
 * For diagnosis: BENCH_INGEST_SECONDS=0 runs the OTLP leg alone (a profile or pg_stat_statements of
 * it only); BENCH_INGEST_BATCH / BENCH_INGEST_SESSIONS change the baseline's batch (e.g. 126 records
 * over 7 sessions, an export's shape: what the export costs beyond the same records sent to ingest).
 *
 *   npm run bench:otlp   (env: BENCH_SECONDS=10, BENCH_ROUNDS=3, BENCH_CLIENTS=16, BENCH_OTLP_SHAPE=sessions|interleaved,
 *                         BENCH_BASE_TREE, BENCH_SERVER_NODE_ARGS, BENCH_INGEST_SECONDS, BENCH_INGEST_BATCH=500,
 *                         BENCH_INGEST_SESSIONS=1, TEST_DATABASE_URL for the admin connection)
 */
import { execSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { context, trace } from "@opentelemetry/api";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { Pool } from "undici";
import { backendCpu, backendCpuSpent, cpuSecondsOf, createBenchDatabase, fmt, startServer } from "./support.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** The ingest leg's seconds (0: the OTLP leg alone, no ingest warm-up either). */
const INGEST_SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? SECONDS);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BASE_TREE = process.env.BENCH_BASE_TREE;
const SHAPE = process.env.BENCH_OTLP_SHAPE ?? "sessions";
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const INGEST_BATCH = Number(process.env.BENCH_INGEST_BATCH ?? 500);
const INGEST_SESSIONS = Number(process.env.BENCH_INGEST_SESSIONS ?? 1);
const SPANS_PER_BATCH = 512;
const SPANS_PER_TURN = 12;
const TURNS_PER_SESSION = 6;
const KEY = "bench-otlp-key-0123456789";

const memory = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ "service.name": "bench-agent", "telemetry.sdk.language": "nodejs" }),
  spanProcessors: [new SimpleSpanProcessor(memory)],
});
const tracer = provider.getTracer("livekit-agents");

/**
 * One LiveKit session's spans (ended, into `memory`): an agent_session span naming the conversation
 * and `turns` voice turns 10 s apart from `t0`, SPANS_PER_TURN spans each. Returns its span count.
 */
function sessionSpans(t0: number, turns: number): number {
  const conv = `RM_${randomUUID()}`;
  const session = tracer.startSpan("agent_session", { startTime: t0, attributes: { "gen_ai.conversation.id": conv } });
  const inSession = trace.setSpan(context.active(), session);
  for (let k = 0; k < turns; k++) {
    const at = t0 + k * 10_000;
    const child = (name: string, parent: ReturnType<typeof tracer.startSpan>, start: number, end: number, attributes: Record<string, string | number> = {}) => {
      const s = tracer.startSpan(name, { startTime: start, attributes }, trace.setSpan(context.active(), parent));
      s.end(end);
      return s;
    };
    const user = tracer.startSpan("user_turn", { startTime: at, attributes: { "gen_ai.request.model": "nova-3", "gen_ai.provider.name": "deepgram", "lk.transcription_delay": 150 } }, inSession);
    child("user_speaking", user, at, at + 1500);
    child("eou_detection", user, at + 1500, at + 1550);
    user.end(at + 1600);
    const agent = tracer.startSpan("agent_turn", { startTime: at + 1600, attributes: { "gen_ai.conversation.id": conv, "gen_ai.agent.name": "bench" } }, inSession);
    const llmNode = tracer.startSpan("llm_node", { startTime: at + 1610 }, trace.setSpan(context.active(), agent));
    const req = tracer.startSpan(
      "llm_request",
      {
        startTime: at + 1611,
        attributes: {
          "gen_ai.provider.name": "openai",
          "gen_ai.request.model": "gpt-4o-mini",
          "gen_ai.usage.input_tokens": 900,
          "gen_ai.usage.output_tokens": 60,
          "gen_ai.response.time_to_first_chunk": 0.3,
        },
      },
      trace.setSpan(context.active(), llmNode),
    );
    child("llm_request_run", req, at + 1612, at + 2300);
    req.end(at + 2301);
    llmNode.end(at + 2302);
    const ttsNode = tracer.startSpan("tts_node", { startTime: at + 1700, attributes: { "gen_ai.request.model": "eleven_flash_v2_5", "gen_ai.provider.name": "elevenlabs" } }, trace.setSpan(context.active(), agent));
    const tts = tracer.startSpan(
      "tts_request",
      {
        startTime: at + 1700,
        attributes: { "lk.tts_metrics": JSON.stringify({ ttfbMs: 200, durationMs: 900, audioDurationMs: 3000, charactersCount: 120, metadata: { modelName: "eleven_flash_v2_5", modelProvider: "elevenlabs" } }) },
      },
      trace.setSpan(context.active(), ttsNode),
    );
    child("tts_request_run", tts, at + 1701, at + 2600);
    tts.end(at + 2601);
    ttsNode.end(at + 2602);
    child("function_tool", agent, at + 1800, at + 1850);
    child("agent_speaking", agent, at + 2000, at + 5000);
    agent.end(at + 5000);
  }
  session.end(t0 + turns * 10_000);
  return 1 + turns * SPANS_PER_TURN;
}

interface OtlpBatch {
  body: Uint8Array;
  /** Committed user turns in the batch: each maps to an STT record, and its agent turn to an LLM and a TTS record. */
  turns: number;
  spans: number;
}

const serialize = (spans: ReadableSpan[]): OtlpBatch => ({
  body: new Uint8Array(ProtobufTraceSerializer.serializeRequest(spans) ?? []),
  turns: spans.filter((s) => s.name === "user_turn").length,
  spans: spans.length,
});

/** The "sessions" shape: one export batch of whole sessions of TURNS_PER_SESSION turns, cut at SPANS_PER_BATCH spans. */
function sessionsBatch(_worker: number): OtlpBatch {
  memory.reset();
  let spans = 0;
  const t0 = Date.now() - 120_000;
  while (spans + 1 + TURNS_PER_SESSION * SPANS_PER_TURN <= SPANS_PER_BATCH) spans += sessionSpans(t0, TURNS_PER_SESSION);
  // The last session of the batch: as many turns as fit.
  const rest = Math.floor((SPANS_PER_BATCH - spans - 1) / SPANS_PER_TURN);
  if (rest > 0) sessionSpans(t0, rest);
  return serialize(memory.getFinishedSpans());
}

/**
 * The "interleaved" shape: what a BatchSpanProcessor sends for agent worker `worker`, running
 * INTERLEAVED_SESSIONS sessions at once. Waves of that many sessions of TURNS_PER_SESSION turns,
 * started 3 s apart; each wave's spans in the order they end, cut into batches of SPANS_PER_BATCH
 * (a session's spans spread over ~3 batches; its agent_session span, which ends it, in the last).
 * Each worker has its own spans not yet sent.
 */
const INTERLEAVED_SESSIONS = 20;
const pendingOf = new Map<number, ReadableSpan[]>();
let waves = 0;
function interleavedBatch(worker: number): OtlpBatch {
  const pending = pendingOf.get(worker) ?? [];
  pendingOf.set(worker, pending);
  while (pending.length < SPANS_PER_BATCH) {
    memory.reset();
    const t0 = Date.now() - 600_000 + (waves++ % 5) * 60_000;
    for (let k = 0; k < INTERLEAVED_SESSIONS; k++) sessionSpans(t0 + k * 3000, TURNS_PER_SESSION);
    const byEnd = (s: ReadableSpan) => s.endTime[0] * 1e9 + s.endTime[1];
    pending.push(...[...memory.getFinishedSpans()].sort((a, b) => byEnd(a) - byEnd(b)));
  }
  return serialize(pending.splice(0, SPANS_PER_BATCH));
}

const otlpBatch = SHAPE === "interleaved" ? interleavedBatch : sessionsBatch;

/**
 * Fills `batches` up to `count` (batch i is client i % CLIENTS's: see otlpLeg), yielding to the event
 * loop after each batch: SimpleSpanProcessor keeps every ended span in a set until its export promise
 * settles, so a synchronous loop over thousands of batches held millions of spans (a fast machine's
 * top-up ran out of heap).
 */
async function build(batches: OtlpBatch[], count: number): Promise<void> {
  while (batches.length < count) {
    batches.push(otlpBatch(batches.length % CLIENTS));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A baseline batch: with `metadata`, each record carries what the receiver writes on the mapped record of its kind. */
function ingestBatch(metadata: boolean): string {
  const sessions = Array.from({ length: INGEST_SESSIONS }, () => `bench-${randomUUID()}`);
  return JSON.stringify(
    Array.from({ length: INGEST_BATCH }, (_, i) => ({
      id: randomUUID(),
      timestamp: Date.now() / 1000 - 60,
      modality: ["stt", "llm", "tts"][i % 3],
      model_id: ["deepgram/nova-3", "openai/gpt-4o-mini", "elevenlabs/eleven_flash_v2_5"][i % 3],
      session_id: sessions[Math.floor((i * INGEST_SESSIONS) / INGEST_BATCH)],
      agent_id: "bench",
      ttfb_ms: 200,
      total_latency_ms: 900,
      input_tokens: i % 3 === 1 ? 900 : undefined,
      output_tokens: i % 3 === 1 ? 60 : undefined,
      audio_seconds: i % 3 === 0 ? 1.5 : undefined,
      characters: i % 3 === 2 ? 120 : undefined,
      metadata: metadata ? mappedMetadata(i % 3) : undefined,
    })),
  );
}

/** The metadata src/otlp/map.ts writes on a mapped STT (0), LLM (1) or TTS (2) record of the bench's spans. */
function mappedMetadata(kind: number): Record<string, unknown> {
  const ids = { source: "otlp", trace_id: randomUUID().replaceAll("-", ""), span_id: randomUUID().replaceAll("-", "").slice(0, 16) };
  if (kind === 0) return { ...ids, span_name: "user_turn", audio_seconds_estimated: true, transcription_delay_ms: 150 };
  if (kind === 1) return { ...ids, span_name: "llm_request" };
  return { ...ids, span_name: "tts_request", audio_duration_ms: 3000 };
}

async function loop(pool: Pool, seconds: number, next: (client: number) => { path: string; body: string | Uint8Array; type: string; units: number }) {
  let units = 0;
  let batches = 0;
  let failures = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      while (performance.now() < deadline) {
        const b = next(client);
        const res = await pool.request({ path: b.path, method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": b.type }, body: b.body });
        await res.body.dump();
        batches++;
        if (res.statusCode === 200) units += b.units;
        else failures++;
        // As an exporter does: a 429 or 503 waits Retry-After before its next export.
        if (res.statusCode === 429 || res.statusCode === 503) await new Promise((r) => setTimeout(r, Number(res.headers["retry-after"] ?? 1) * 1000));
      }
    }),
  );
  return { perSecond: units / ((performance.now() - started) / 1000), batches, failures };
}

/** A server under test, with its own database and its own cursor over the prebuilt batches (each sent once). */
interface Target {
  name: string;
  pool: Pool;
  pid: number;
  dbUrl: string;
  stop: () => Promise<void>;
  /** Per client, how many prebuilt batches it has sent: client c sends batches c, c + CLIENTS, c + 2 × CLIENTS… in order. */
  sent: number[];
  /** Ingest records/s of the same records the receiver maps (the target's baseline), and of records without metadata, per round. */
  ingest: number[];
  bare: number[];
  otlp: number[];
  /** CPU ms (user + system) per batch of the server and of its database's Postgres backends, per round. */
  ingestCpu: number[];
  bareCpu: number[];
  otlpCpu: number[];
  failures: number;
  /** Whether a round sent more batches than were prebuilt (re-sends: cheaper duplicates). */
  resent: boolean;
}

async function target(name: string, tag: string, nodeArgs: string[], main: string): Promise<Target> {
  const db = await createBenchDatabase(tag);
  const server = await startServer({ DATABASE_URL: db.url, VOXGATE_API_KEY: KEY }, [...nodeArgs, "--import", import.meta.resolve("tsx"), main]);
  const pool = new Pool(server.baseUrl, { connections: CLIENTS });
  return {
    name,
    pool,
    pid: server.child.pid ?? 0,
    dbUrl: db.url,
    async stop() {
      await pool.close();
      await server.stop();
      await db.drop();
    },
    sent: Array.from({ length: CLIENTS }, () => 0),
    ingest: [],
    bare: [],
    otlp: [],
    ingestCpu: [],
    bareCpu: [],
    otlpCpu: [],
    failures: 0,
    resent: false,
  };
}

/** CPU seconds so far of a target's server and of its database's Postgres backends. */
const cpuNow = async (t: Target) => ({ pg: await backendCpu(t.dbUrl), server: cpuSecondsOf(t.pid) });

/** CPU ms per batch between two cpuNow readings: server and Postgres together, and the server's part. */
function cpuPerBatch(a: Awaited<ReturnType<typeof cpuNow>>, b: Awaited<ReturnType<typeof cpuNow>>, batches: number) {
  const server = ((b.server - a.server) * 1000) / batches;
  return { total: server + (backendCpuSpent(a.pg, b.pg) * 1000) / batches, server };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function main() {
  const load = () => execSync("uptime").toString().trim();
  console.log(`load at start: ${load()}`);
  // Batches built before the clock starts: the client's span building is not the server's cost.
  // Enough that no server gets one twice (a re-send is a cheaper duplicate).
  const prebuilt: OtlpBatch[] = [];
  await build(prebuilt, Number(process.env.BENCH_OTLP_BATCHES ?? 1500));
  // Topped up before each OTLP leg (outside its clock) to twice the batches a server took in its last
  // leg: on a quiet machine 1,500 ran out in the fourth round, and re-sends (cheaper duplicates) made the
  // later rounds look faster.
  const lastLeg = new Map<Target, number>();
  // Clients move at about the same pace; each gets twice its share of the last leg, past the furthest one.
  const topUp = (t: Target) => build(prebuilt, CLIENTS * (Math.max(...t.sent) + Math.ceil(Math.max(1500, 2 * (lastLeg.get(t) ?? 0)) / CLIENTS)));
  // Per batch on average (the interleaved shape's batches carry from 38 to 46 user turns).
  const spansPerBatch = prebuilt.reduce((n, b) => n + b.spans, 0) / prebuilt.length;
  const turnsPerBatch = prebuilt.reduce((n, b) => n + b.turns, 0) / prebuilt.length;
  console.log(`shape ${SHAPE}: ${fmt(spansPerBatch, 0)} spans and ${fmt(turnsPerBatch, 1)} user turns per batch on average`);
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const targets = [await target("this tree", "otlp", nodeArgs, fileURLToPath(new URL("../src/cli/main.ts", import.meta.url)))];
  if (BASE_TREE) targets.push(await target(`base ${BASE_TREE}`, "otlpbase", [], `${BASE_TREE}/src/cli/main.ts`));
  const ingestLeg = (metadata: boolean) => () => ({ path: "/v1/ingest", body: ingestBatch(metadata), type: "application/json", units: INGEST_BATCH });
  const otlpLeg = (t: Target) => (client: number) => {
    const i = client + CLIENTS * (t.sent[client] as number);
    t.sent[client] = (t.sent[client] as number) + 1;
    if (i >= prebuilt.length) t.resent = true;
    const b = prebuilt[i % prebuilt.length] as OtlpBatch;
    return { path: "/v1/otlp/v1/traces", body: b.body, type: "application/x-protobuf", units: b.turns };
  };
  try {
    // Warm-up of both paths on every server, then measured rounds, the servers' legs interleaved.
    for (const t of targets) {
      if (INGEST_SECONDS > 0) {
        await loop(t.pool, 2, ingestLeg(true));
        await loop(t.pool, 1, ingestLeg(false));
      }
      const warm = await loop(t.pool, 2, otlpLeg(t));
      // The first round's top-up from the warm-up's pace: a fast machine took more than 1,500 batches
      // in its first round, and the re-sends made that round look faster.
      lastLeg.set(t, Math.ceil((warm.batches * SECONDS) / 2));
    }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        // CPU of the server and of its Postgres backends: on this shared machine a leg's CPU per batch
        // moves less with the load than its throughput does.
        await topUp(t);
        const c0 = await cpuNow(t);
        const ingest = await loop(t.pool, INGEST_SECONDS, ingestLeg(true));
        const c1 = await cpuNow(t);
        const bare = await loop(t.pool, INGEST_SECONDS, ingestLeg(false));
        const c2 = await cpuNow(t);
        const otlp = await loop(t.pool, SECONDS, otlpLeg(t));
        lastLeg.set(t, otlp.batches);
        const c3 = await cpuNow(t);
        const { total: ingestCpu, server: ingestServerCpu } = cpuPerBatch(c0, c1, ingest.batches);
        const { total: bareCpu } = cpuPerBatch(c1, c2, bare.batches);
        const { total: otlpCpu, server: otlpServerCpu } = cpuPerBatch(c2, c3, otlp.batches);
        t.ingest.push(ingest.perSecond);
        t.bare.push(bare.perSecond);
        t.bareCpu.push(bareCpu);
        t.otlp.push(otlp.perSecond * 3); // mapped records/s: 3 per turn
        t.ingestCpu.push(ingestCpu);
        t.otlpCpu.push(otlpCpu);
        t.failures += ingest.failures + bare.failures + otlp.failures;
        const ratio = (otlp.perSecond * 3) / ingest.perSecond;
        const bareRatio = (otlp.perSecond * 3) / bare.perSecond;
        console.log(
          `round ${round + 1} ${t.name}: /v1/ingest of the same records ${fmt(ingest.perSecond, 0)} records/s, CPU (server + Postgres) ${fmt(ingestCpu, 1)} ms/batch (server ${fmt(ingestServerCpu, 1)}), without metadata ${fmt(bare.perSecond, 0)} records/s, ${fmt(bareCpu, 1)} ms/batch; OTLP ${fmt((otlp.perSecond / turnsPerBatch) * spansPerBatch, 0)} spans/s = ${fmt(otlp.perSecond * 3, 0)} mapped records/s + ${fmt(otlp.perSecond, 0)} turns/s, CPU ${fmt(otlpCpu, 1)} ms/batch (server ${fmt(otlpServerCpu, 1)}); ratio ${ratio.toFixed(2)}x (without metadata ${bareRatio.toFixed(2)}x)  (${load()})`,
        );
      }
    }
    for (const t of targets) {
      if (t.resent) console.warn(`note: ${t.name} ran out of prebuilt batches in a round: its later exports were re-sends (duplicates)`);
      const records = median(t.otlp);
      // CPU per record: ingest's per record over OTLP's per mapped record (the ratio were CPU the only limit).
      const perMapped = median(t.otlpCpu) / (turnsPerBatch * 3);
      const cpuRatio = median(t.ingestCpu) / INGEST_BATCH / perMapped;
      const bareCpuRatio = median(t.bareCpu) / INGEST_BATCH / perMapped;
      console.log(
        `${t.name}: median /v1/ingest of the same records ${fmt(median(t.ingest), 0)} records/s (CPU, server + Postgres, ${fmt(median(t.ingestCpu), 1)} ms/batch), without metadata ${fmt(median(t.bare), 0)} records/s (${fmt(median(t.bareCpu), 1)} ms/batch); OTLP ${fmt((records / 3 / turnsPerBatch) * spansPerBatch, 0)} spans/s = ${fmt(records, 0)} mapped records/s (CPU ${fmt(median(t.otlpCpu), 1)} ms/batch of ${fmt(spansPerBatch, 0)} spans, ${CLIENTS} clients, ${t.failures} failures)`,
      );
      console.log(
        `${t.name}: ratio of medians ${(records / median(t.ingest)).toFixed(2)}x ingest of the same records (target >= 0.5), by CPU per record ${cpuRatio.toFixed(2)}x; ${(records / median(t.bare)).toFixed(2)}x ingest of records without metadata, by CPU ${bareCpuRatio.toFixed(2)}x`,
      );
    }
    if (targets.length === 2) {
      const [a, b] = targets as [Target, Target];
      console.log(`OTLP mapped records/s, this tree / base: ${(median(a.otlp) / median(b.otlp)).toFixed(2)}x (per round: ${a.otlp.map((x, i) => (x / (b.otlp[i] ?? Number.NaN)).toFixed(2)).join(" / ")})`);
      console.log(`OTLP CPU (server + Postgres) per batch, this tree / base: ${(median(a.otlpCpu) / median(b.otlpCpu)).toFixed(2)}x`);
    }
    console.log(`load at end: ${load()}`);
  } finally {
    for (const t of targets) await t.stop();
  }
}

await main();
