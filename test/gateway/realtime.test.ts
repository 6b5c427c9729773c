import { randomUUID } from "node:crypto";
import { initializeLogger } from "@livekit/agents";
import { realtime } from "@livekit/agents-plugin-openai";
import { sql } from "drizzle-orm";
import OpenAI from "openai";
import { OpenAIRealtimeWS } from "openai/realtime/ws";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { tlsTerminator } from "../livekit/support.js";
import { useTestApp } from "../support/app.js";
import { OpenAIRealtimeStub, REALTIME_USAGE } from "../support/stubs/openai-realtime.js";
import { presentedKeys } from "../support/stubs/vendor-stub.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY } from "./support.js";
import { openWs, opened, refused, waitFor } from "./ws-support.js";

/**
 * OpenAI Realtime speech-to-speech through Voxgate: the `openai` client's realtime WebSocket helper
 * (wss only: through a TLS terminator with a certificate made for the run) and LiveKit's
 * RealtimeModel, against a loopback realtime vendor. Each response.done is one llm record with the
 * audio/text token split, priced from the catalog (text $4/$16, audio $32/$64, cached $0.40 per 1M).
 */
initializeLogger({ pretty: false, level: "error" });

const vendor = new OpenAIRealtimeStub();
let tls: Awaited<ReturnType<typeof tlsTerminator>>;

beforeAll(async () => {
  await vendor.start();
});
afterAll(async () => {
  await vendor.stop();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${vendor.url}/v1" }
models:
  llm:
    openai/gpt-realtime: { provider: openai, model: gpt-realtime }
projects:
  rt-capped: { daily_budget: 0.09, budget_action: block }
`,
}));
// Registered after useTestApp, so it runs before the app closes (the tunnel holds a connection to it).
afterAll(async () => {
  await tls?.close();
});
beforeEach(() => {
  vendor.reset();
  vendor.received.length = 0;
  vendor.holdResponses = false;
});

interface RealtimeRow {
  id: string;
  project: string;
  session_id: string | null;
  modality: string;
  model_id: string;
  status: string;
  error_message: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cached_input_tokens: number | null;
  input_audio_tokens: number | null;
  output_audio_tokens: number | null;
  ttfb_ms: number | null;
  cost_usd: string | null;
  metadata: Record<string, unknown> | null;
}

async function rowsOf(project: string): Promise<RealtimeRow[]> {
  await app.services.gateway.recorder.flush();
  const r = (await app.services.database.db.execute(
    sql`SELECT id, project, session_id, modality, model_id, status, error_message, input_tokens::float8 AS input_tokens, output_tokens::float8 AS output_tokens,
               cached_input_tokens::float8 AS cached_input_tokens, input_audio_tokens::float8 AS input_audio_tokens, output_audio_tokens::float8 AS output_audio_tokens,
               ttfb_ms, cost_usd::text AS cost_usd, metadata
          FROM requests WHERE project = ${project} ORDER BY ts`,
  )) as unknown as { rows: RealtimeRow[] };
  return r.rows;
}

async function eventually<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const v = await read();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  return read();
}

/** REALTIME_USAGE priced: 40 text in × 4, 96 uncached audio in × 32, 64 cached × 0.40, 30 text out × 16, 100 audio out × 64. */
const RESPONSE_COST = (40 * 4 + 96 * 32 + 64 * 0.4 + 30 * 16 + 100 * 64) / 1e6;

describe("OpenAI Realtime speech-to-speech", () => {
  it("the openai client's realtime helper (wss) relays a conversation: frames unchanged, keys swapped, model rewritten, one record per response.done", async () => {
    tls ??= await tlsTerminator(Number(new URL(app.base).port));
    const client = new OpenAI({ apiKey: OPERATOR_KEY, baseURL: `https://127.0.0.1:${tls.port}/p/rt-openai/s/call-1/openai/v1` });
    const rt = new OpenAIRealtimeWS({ model: "openai/gpt-realtime", options: { ca: tls.ca } }, client);
    const events: string[] = [];
    rt.on("event", (e) => events.push(e.type));
    const opened = new Promise<void>((resolve, reject) => {
      rt.socket.once("open", () => resolve());
      rt.socket.once("error", reject);
    });
    await opened;
    const audio = Buffer.alloc(9600, 7).toString("base64");
    const append = JSON.stringify({ type: "input_audio_buffer.append", audio });
    rt.send({ type: "session.update", session: { type: "realtime", model: "openai/gpt-realtime", instructions: "be brief" } });
    rt.socket.send(append);
    rt.send({ type: "input_audio_buffer.commit" });
    const done = new Promise<void>((resolve) => rt.on("response.done", () => resolve()));
    rt.send({ type: "response.create" });
    await done;
    rt.close();

    expect(events).toContain("response.output_audio.delta");
    const seen = vendor.seen.at(-1);
    expect(seen?.query.get("model")).toBe("gpt-realtime");
    expect(JSON.stringify(seen?.headers)).not.toContain(OPERATOR_KEY);
    expect(presentedKeys(seen as NonNullable<typeof seen>).join(" ")).toContain(PROVIDER_KEY);
    const update = JSON.parse(String(vendor.received[0])) as { session: { model: string; instructions: string } };
    expect(update.session).toMatchObject({ model: "gpt-realtime", instructions: "be brief" });
    expect(vendor.received[1]).toBe(append);

    const rows = await eventually(
      () => rowsOf("rt-openai"),
      (r) => r.length >= 1,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      modality: "llm",
      model_id: "openai/gpt-realtime",
      session_id: "call-1",
      status: "success",
      input_tokens: REALTIME_USAGE.input_tokens,
      output_tokens: REALTIME_USAGE.output_tokens,
      cached_input_tokens: 64,
      input_audio_tokens: 160,
      output_audio_tokens: 100,
      metadata: expect.objectContaining({ response_id: expect.stringMatching(/^resp_/) }),
    });
    expect(rows[0]?.ttfb_ms).not.toBeNull();
    expect(Number(rows[0]?.cost_usd)).toBeCloseTo(RESPONSE_COST, 9);
  });

  it("LiveKit's RealtimeModel({ baseURL }) generates replies through Voxgate, each recorded", async () => {
    const model = new realtime.RealtimeModel({ baseURL: `${app.base}/p/rt-livekit/s/lk-1/openai/v1`, apiKey: OPERATOR_KEY, model: "gpt-realtime" });
    const session = model.session();
    try {
      const generation = await session.generateReply();
      expect(generation.responseId).toMatch(/^resp_/);
      await session.generateReply();
    } finally {
      await session.close();
      await model.close();
      // The plugin's close() leaves its socket open (seen with 1.9); the vendor ends the session instead.
      vendor.endSessions();
    }
    const rows = await eventually(
      () => rowsOf("rt-livekit"),
      (r) => r.length >= 2,
    );
    expect(rows).toHaveLength(2);
    for (const r of rows) expect(r).toMatchObject({ model_id: "openai/gpt-realtime", status: "success", output_audio_tokens: 100, session_id: "lk-1" });
  });

  it("a session that ends with a response in flight records its partial usage as error", async () => {
    vendor.holdResponses = true;
    const s = opened(await openWs(`${app.base.replace("http://", "ws://")}/openai/v1/realtime?model=openai/gpt-realtime`, { headers: { authorization: `Bearer ${OPERATOR_KEY}`, "x-voxgate-project": "rt-partial" } }));
    s.ws.send(JSON.stringify({ type: "response.create" }));
    await waitFor(s, (m) => String(m).includes("response.output_audio_transcript.delta"));
    s.ws.close(1000);
    await s.closed;
    const rows = await eventually(
      () => rowsOf("rt-partial"),
      (r) => r.length >= 1,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: "error", error_message: "session ended before response.done", output_tokens: 2, model_id: "openai/gpt-realtime" });
  });

  it("intent=transcription still selects the transcription route (an llm realtime model is not routable there)", async () => {
    const s = await openWs(`${app.base.replace("http://", "ws://")}/openai/v1/realtime?intent=transcription&model=openai/gpt-realtime`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
    expect(refused(s).status).toBe(404);
  });

  it("/v1/ingest accepts input_audio_tokens and output_audio_tokens and prices them at the audio rates", async () => {
    const id = randomUUID();
    const res = await app.call("POST", "/v1/ingest", {
      key: OPERATOR_KEY,
      body: [{ id, timestamp: Date.now(), modality: "llm", model_id: "openai/gpt-realtime", project: "rt-ingest", input_tokens: 200, output_tokens: 130, cached_input_tokens: 64, input_audio_tokens: 160, output_audio_tokens: 100 }],
    });
    expect(res.status).toBeLessThan(300);
    const rows = await rowsOf("rt-ingest");
    expect(rows[0]).toMatchObject({ input_audio_tokens: 160, output_audio_tokens: 100 });
    expect(Number(rows[0]?.cost_usd)).toBeCloseTo(RESPONSE_COST, 9);
  });

  it("block budget: a response.create that finds no room for one response's estimate gets a realtime error event, is not forwarded, and the session closes 1008", async () => {
    // One response's estimate is 1,024 audio tokens in ($32/M) and out ($64/M): $0.098304. The budget
    // (0.09) has room for the first (held at the upgrade), not for the second.
    const s = opened(await openWs(`${app.base.replace("http://", "ws://")}/openai/v1/realtime?model=openai/gpt-realtime`, { headers: { authorization: `Bearer ${OPERATOR_KEY}`, "x-voxgate-project": "rt-capped" } }));
    s.ws.send(JSON.stringify({ type: "response.create" }));
    await waitFor(s, (m) => String(m).includes('"response.done"'));
    const before = vendor.received.length;
    s.ws.send(JSON.stringify({ type: "response.create", event_id: "evt_second" }));
    expect(await s.closed).toEqual({ code: 1008, reason: "budget_exceeded" });
    const error = JSON.parse(String(await waitFor(s, (m) => String(m).includes('"type":"error"')))) as { error: { code: string; type: string } };
    expect(error.error).toMatchObject({ code: "budget_exceeded", type: "insufficient_quota" });
    expect(vendor.received.slice(before).map(String).join("")).not.toContain("evt_second");
    const rows = await eventually(
      () => rowsOf("rt-capped"),
      (r) => r.length >= 2,
    );
    expect(rows.map((r) => r.status)).toEqual(["success", "error"]);
    expect(rows[1]).toMatchObject({ error_message: expect.stringContaining("budget_exceeded") });
    expect(Number(rows[1]?.cost_usd)).toBe(0);
  });

  it("a session.update naming another model is answered with an OpenAI error event, not forwarded, and recorded as refused (never rewritten)", async () => {
    const s = opened(await openWs(`${app.base.replace("http://", "ws://")}/openai/v1/realtime?model=openai/gpt-realtime`, { headers: { authorization: `Bearer ${OPERATOR_KEY}`, "x-voxgate-project": "rt-swap" } }));
    s.ws.send(JSON.stringify({ type: "session.update", event_id: "evt_swap", session: { type: "realtime", model: "gpt-4o-realtime-preview" } }));
    const error = JSON.parse(String(await waitFor(s, (m) => String(m).includes('"type":"error"')))) as { error: { code: string; event_id: string } };
    expect(error.error).toMatchObject({ code: "model_not_found", event_id: "evt_swap" });
    // The session goes on with its own model: naming it is passed on (with the vendor's name).
    s.ws.send(JSON.stringify({ type: "session.update", session: { type: "realtime", model: "openai/gpt-realtime" } }));
    await waitFor(s, (m) => String(m).includes("session.updated"));
    s.ws.close(1000);
    await s.closed;
    const sent = vendor.received.map(String);
    expect(sent.join("")).not.toContain("gpt-4o-realtime-preview");
    expect(sent.some((f) => f.includes('"model":"gpt-realtime"'))).toBe(true);
    const rows = await eventually(
      () => rowsOf("rt-swap"),
      (r) => r.length >= 1,
    );
    expect(rows[0]).toMatchObject({ status: "error", model_id: "gpt-4o-realtime-preview", error_message: expect.stringContaining("refused in-band") });
  });
});
