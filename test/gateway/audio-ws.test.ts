import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type TestApp, useTestApp } from "../support/app.js";
import { pseudoAudio, sha256 } from "../support/stubs/audio.js";
import { CartesiaStub } from "../support/stubs/cartesia.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { ElevenLabsStub } from "../support/stubs/elevenlabs.js";
import { OpenAIAudioStub } from "../support/stubs/openai-audio.js";
import { presentedKeys, type StubServer } from "../support/stubs/vendor-stub.js";
import { ACME_KEY, GLOBEX_KEY, gatewayApp, INGEST_KEY, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";
import { type OpenSocket, openWs, opened, refused, settledStream, sum, waitFor } from "./ws-support.js";

/**
 * The WebSocket routes through a real Voxgate on loopback (node-server v2 upgrades + ws), against
 * scriptable stub vendors: bytes hashed through, exact units and prices, keys, refusals before the
 * upgrade, fallback at connect, close codes, recording. Prices: catalog × default_markup 1.25.
 */
const deepgram = new DeepgramStub();
const deepgramB = new DeepgramStub();
const elevenlabs = new ElevenLabsStub();
const cartesia = new CartesiaStub();
const openai = new OpenAIAudioStub();
const stubs: StubServer[] = [deepgram, deepgramB, elevenlabs, cartesia, openai];

const YAML = (extra = "") => `${KEYS_YAML}
providers:
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
  deepgram-eu: { type: deepgram, api_key: "${PROVIDER_KEY}", base_url: "${deepgramB.url}/v1" }
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${elevenlabs.url}/v1" }
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${cartesia.url}" }
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${openai.url}/v1" }
models:
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
    deepgram-eu/nova-3: { provider: deepgram-eu, model: nova-3 }
    openai/gpt-4o-mini-transcribe: { provider: openai, model: gpt-4o-mini-transcribe }
  tts:
    deepgram/aura-2-thalia-en: { provider: deepgram, model: aura-2-thalia-en }
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
    cartesia/sonic-2: { provider: cartesia, model: sonic-2 }
fallbacks:
  stt: [deepgram/nova-3, deepgram-eu/nova-3]
stacks:
  voice: { tts: cartesia/sonic-2 }
projects:
  ws-proj: { default_stack: voice }
pricing:
  catalog:
    cartesia/sonic-2: { price_usd: 0.03 }
${extra}`;

beforeAll(async () => {
  await Promise.all(stubs.map((s) => s.start()));
});
afterAll(async () => {
  await Promise.all(stubs.map((s) => s.stop()));
});
const app = useTestApp(() => ({ yaml: YAML(), listen: true }));
const ws = () => app.base.replace("http://", "ws://");
beforeEach(() => {
  for (const s of stubs) s.reset();
});

const LISTEN = "/deepgram/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000&channels=1";
const token = (key = OPERATOR_KEY, project = "ws-proj") => ({ authorization: `Token ${key}`, "x-voxgate-project": project });
const requestIdOf = (s: OpenSocket) => String(s.headers["x-voxgate-request-id"]);

function expectProviderKeyOnly(stub: StubServer) {
  const req = stub.seen.at(-1);
  expect(req?.websocket).toBe(true);
  const seen = JSON.stringify({ h: req?.headers, q: req?.query.toString() });
  for (const k of [OPERATOR_KEY, ACME_KEY, GLOBEX_KEY]) expect(seen).not.toContain(k);
  expect(presentedKeys(req as NonNullable<typeof req>).join(" ")).toContain(PROVIDER_KEY);
}

/** Streams `seconds` of 16 kHz mono linear16 in 1 s frames, then CloseStream; resolves at the close. */
async function streamListen(s: OpenSocket, seconds: number): Promise<Uint8Array[]> {
  const frames = Array.from({ length: seconds }, (_, i) => pseudoAudio(32_000, i + 1));
  for (const f of frames) s.ws.send(f);
  s.ws.send(JSON.stringify({ type: "CloseStream" }));
  await s.closed;
  return frames;
}

describe("Deepgram live over WebSocket", () => {
  it("relays audio unchanged, records Metadata.duration with its price, sends only the provider key", async () => {
    const s = opened(await openWs(`${ws()}${LISTEN}`, { headers: token() }));
    const frames = await streamListen(s, 60);
    const atStub = (deepgram.seen[0]?.frames ?? []).filter((f): f is Uint8Array => typeof f !== "string");
    expect(sha256(Buffer.concat(atStub))).toBe(sha256(Buffer.concat(frames)));
    expect(s.received.filter((m) => String(m).includes('"Results"'))).toHaveLength(60);
    expect(deepgram.seen[0]?.query.get("model")).toBe("nova-3");
    expectProviderKeyOnly(deepgram);
    expect(JSON.stringify(s.headers)).not.toContain(PROVIDER_KEY);

    const rows = await settledStream(app, requestIdOf(s));
    expect(rows).toHaveLength(1);
    // nova-3 at $0.0077/min: 60 s.
    expect(rows[0]).toMatchObject({ model_id: "deepgram/nova-3", project: "ws-proj", status: "success", audio_seconds: 60, cost_usd: "0.0077000000", rated_price_usd: "0.0096250000" });
    expect(rows[0]?.audio_seconds).toBe(deepgram.truth[0]?.audioSeconds);
    expect(rows[0]?.ttfb_ms).not.toBeNull();
  });

  it("takes the key from the browser subprotocol (token, <key>) and never echoes it", async () => {
    const s = opened(await openWs(`${ws()}${LISTEN}`, { protocols: ["token", OPERATOR_KEY] }));
    expect(s.ws.protocol).toBe("token");
    expect(JSON.stringify(s.headers)).not.toContain(OPERATOR_KEY);
    await streamListen(s, 1);
    expectProviderKeyOnly(deepgram);
    expect(deepgram.seen[0]?.headers["sec-websocket-protocol"]).toBeUndefined();
  });

  it("times the first result no earlier than the vendor's delay", async () => {
    deepgram.reset({ delayMs: 60 });
    const s = opened(await openWs(`${ws()}${LISTEN}`, { headers: token() }));
    await streamListen(s, 2);
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row?.ttfb_ms ?? 0).toBeGreaterThanOrEqual(59);
    expect(row?.ttfb_ms ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(row?.total_latency_ms ?? 0);
  });

  it("closes the vendor's stream when the client leaves, and records the partial audio", async () => {
    const s = opened(await openWs(`${ws()}${LISTEN}`, { headers: token() }));
    s.ws.send(pseudoAudio(16_000)); // 0.5 s
    await waitFor(s, (m) => String(m).includes("Results"));
    const vendorSide = [...deepgram.openSockets][0];
    const vendorClosed = new Promise<number>((r) => vendorSide?.once("close", (code) => r(code)));
    s.ws.close(4001, "agent hung up");
    expect(await vendorClosed).toBe(4001);
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row).toMatchObject({ status: "success", audio_seconds: 0.5 });
  });

  it("gives the client 1011 when the vendor drops mid-stream and no candidate is left, and records an error with the partial units", async () => {
    deepgram.reset({ dropAfter: 2 });
    // The fallback refuses too: live failover (test/gateway/failover/) has nowhere to go.
    deepgramB.reset({ statuses: [503] });
    const s = opened(await openWs(`${ws()}${LISTEN}`, { headers: token() }));
    for (let i = 0; i < 4; i++) s.ws.send(pseudoAudio(3200, i + 1));
    expect((await s.closed).code).toBe(1011);
    const row = (await settledStream(app, requestIdOf(s))).find((r) => r.id === requestIdOf(s));
    expect(row?.status).toBe("error");
    expect(row?.error_message).toContain("upstream connection lost");
    expect(row?.audio_seconds ?? 0).toBeGreaterThan(0);
    // Both vendors failed and cool down (DEFAULT_COOLDOWN_MS): the next tests meet them rested.
    const gw = app.services.gateway;
    while (gw.cooldowns.cooling("deepgram") || gw.cooldowns.cooling("deepgram-eu")) await new Promise((r) => setTimeout(r, 50));
  });

  it("passes a vendor's close code for a bad message, and stays up (no 5xx)", async () => {
    const s = opened(await openWs(`${ws()}${LISTEN}`, { headers: token() }));
    s.ws.send("this is not json");
    expect(await s.closed).toEqual({ code: 1008, reason: "DATA-0000: bad message" });
    const again = opened(await openWs(`${ws()}${LISTEN}`, { headers: token() }));
    await streamListen(again, 1);
  });

  it("fails over to the next stt model at connect, recording the failed attempt and the fallback", async () => {
    deepgram.reset({ statuses: [503] });
    const s = opened(await openWs(`${ws()}${LISTEN}`, { headers: token() }));
    await streamListen(s, 2);
    const id = requestIdOf(s);
    const [row] = await settledStream(app, id);
    expect(row).toMatchObject({ model_id: "deepgram-eu/nova-3", status: "fallback", fallback_from: "deepgram/nova-3", audio_seconds: 2 });
    const failed = (await recordedRows(app)).filter((r) => r.model_id === "deepgram/nova-3" && r.status === "error" && r.error_message?.includes("503"));
    expect(failed.length).toBeGreaterThanOrEqual(1);
    expect(deepgramB.seen).toHaveLength(1);
  });

  it("answers the last candidate's 429 before the upgrade, with Retry-After", async () => {
    deepgramB.reset({ statuses: [429], retryAfter: "3" });
    const r = refused(await openWs(`${ws()}/deepgram/v1/listen?model=deepgram-eu/nova-3&encoding=linear16&sample_rate=16000`, { headers: token() }));
    expect(r.status).toBe(429);
    expect(r.headers["retry-after"]).toBe("3");
    expect(r.headers["x-voxgate-error"]).toBe("rate_limited");
  });
});

describe("refusals before the upgrade", () => {
  it("401 / 403 / 404 / 426 as HTTP statuses, and no vendor is reached", async () => {
    expect(refused(await openWs(`${ws()}${LISTEN}`, { headers: token("wrong-key-0123456789abcdef") })).status).toBe(401);
    expect(refused(await openWs(`${ws()}${LISTEN}`)).status).toBe(401);
    expect(refused(await openWs(`${ws()}${LISTEN}`, { headers: token(INGEST_KEY) })).status).toBe(403);
    const missing = refused(await openWs(`${ws()}/deepgram/v1/listen?model=nova-9`, { headers: token() }));
    expect(missing.status).toBe(404);
    expect(missing.headers["x-voxgate-error"]).toBe("model_not_found");
    const plain = await fetch(`${app.base}/deepgram/v1/listen?model=nova-3`, { headers: token() });
    expect(plain.status).toBe(426);
    const badVoice = refused(await openWs(`${ws()}/elevenlabs/v1/text-to-speech/bad.voice/multi-stream-input`, { headers: { "xi-api-key": OPERATOR_KEY } }));
    expect(badVoice.status).toBe(400);
    for (const stub of stubs) expect(stub.seen).toHaveLength(0);
  });

  it("a project over its daily budget with budget_action block is refused at the upgrade and reaches no vendor", async () => {
    const blocked = await gatewayApp(YAML().replace("ws-proj: { default_stack: voice }", "ws-proj: { default_stack: voice }\n  capped: { daily_budget: 0.001, budget_action: block }"));
    try {
      const base = blocked.base.replace("http://", "ws://");
      const first = opened(await openWs(`${base}${LISTEN}`, { headers: token(OPERATOR_KEY, "capped") }));
      await streamListen(first, 60); // $0.0077 > $0.001
      await settledStream(blocked, requestIdOf(first));
      deepgram.reset();
      let status = 0;
      for (let i = 0; i < 100 && status !== 402; i++) {
        const r = await openWs(`${base}${LISTEN}`, { headers: token(OPERATOR_KEY, "capped") });
        if ("status" in r) status = r.status;
        else r.ws.terminate();
        if (status !== 402) await new Promise((res) => setTimeout(res, 50));
      }
      expect(status).toBe(402);
      deepgram.reset();
      const r = refused(await openWs(`${base}${LISTEN}`, { headers: token(OPERATOR_KEY, "capped") }));
      expect(r.headers["x-voxgate-error"]).toBe("budget_exceeded");
      expect(deepgram.seen).toHaveLength(0);
    } finally {
      await blocked.close();
    }
  });
});

describe("TTS and realtime STT over WebSocket", () => {
  it("ElevenLabs multi-stream-input: characters of the text (not the opener), audio unchanged", async () => {
    const s = opened(await openWs(`${ws()}/elevenlabs/v1/text-to-speech/voice1/multi-stream-input?model_id=eleven_flash_v2_5&output_format=pcm_24000`, { headers: { "xi-api-key": OPERATOR_KEY } }));
    s.ws.send(JSON.stringify({ text: " ", context_id: "c1" }));
    s.ws.send(JSON.stringify({ text: "y".repeat(200), context_id: "c1" }));
    s.ws.send(JSON.stringify({ context_id: "c1", flush: true }));
    const audio = await waitFor(s, (m) => String(m).includes('"audio"'));
    expect(sha256(Buffer.from((JSON.parse(String(audio)) as { audio: string }).audio, "base64"))).toBe(sha256(Buffer.from(await ttsAudio("y".repeat(200)))));
    s.ws.send(JSON.stringify({ close_socket: true }));
    expect((await s.closed).code).toBe(1000);
    expect(elevenlabs.seen[0]?.query.get("model_id")).toBe("eleven_flash_v2_5");
    expect(elevenlabs.seen[0]?.query.get("output_format")).toBe("pcm_24000");
    expectProviderKeyOnly(elevenlabs);
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row).toMatchObject({ model_id: "elevenlabs/eleven_flash_v2_5", characters: 200, cost_usd: "0.0100000000", rated_price_usd: "0.0125000000" });
  });

  it("Cartesia tts/websocket: key from ?api_key stripped, model from the project's stack and rewritten per message", async () => {
    const s = opened(await openWs(`${ws()}/p/ws-proj/s/call-7/cartesia/tts/websocket?api_key=${OPERATOR_KEY}&cartesia_version=2025-04-16`));
    s.ws.send(JSON.stringify({ model_id: "cartesia/sonic-2", transcript: "z".repeat(100), context_id: "k", continue: false, voice: { mode: "id", id: "v" } }));
    await waitFor(s, (m) => String(m).includes('"done"'));
    s.ws.close(1000);
    await s.closed;
    const seen = cartesia.seen[0];
    expect(seen?.query.get("api_key")).toBeNull();
    expect(seen?.query.get("cartesia_version")).toBe("2025-04-16");
    expect(JSON.parse(String(seen?.frames[0])).model_id).toBe("sonic-2");
    expectProviderKeyOnly(cartesia);
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row).toMatchObject({ model_id: "cartesia/sonic-2", project: "ws-proj", session_id: "call-7", characters: 100, cost_usd: "0.0030000000" });
  });

  it("Deepgram speak over WebSocket: Speak text counted, binary audio unchanged", async () => {
    const s = opened(await openWs(`${ws()}/deepgram/v1/speak?model=aura-2-thalia-en&encoding=linear16`, { headers: token() }));
    s.ws.send(JSON.stringify({ type: "Speak", text: "q".repeat(40) }));
    s.ws.send(JSON.stringify({ type: "Flush" }));
    const audio = await waitFor(s, (m) => Buffer.isBuffer(m));
    expect(sha256(audio as Buffer)).toBe(sha256(Buffer.from(await ttsAudio("q".repeat(40)))));
    s.ws.send(JSON.stringify({ type: "Close" }));
    await s.closed;
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row).toMatchObject({ model_id: "deepgram/aura-2-thalia-en", characters: 40, status: "success" });
  });

  it("Cartesia's fixed /tts/websocket path at the root works too", async () => {
    const s = opened(await openWs(`${ws()}/tts/websocket?cartesia_version=2024-06-10`, { headers: { "x-api-key": OPERATOR_KEY, "x-voxgate-project": "ws-proj" } }));
    s.ws.send(JSON.stringify({ model_id: "sonic-2", transcript: "hello", context_id: "k" }));
    await waitFor(s, (m) => String(m).includes('"done"'));
    s.ws.close();
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row?.characters).toBe(5);
  });

  it("OpenAI realtime transcription: session model rewritten, usage.seconds recorded and priced", async () => {
    const s = opened(await openWs(`${ws()}/openai/v1/realtime?intent=transcription&model=openai/gpt-4o-mini-transcribe`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } }));
    s.ws.send(JSON.stringify({ type: "transcription_session.update", session: { input_audio_format: "pcm16", input_audio_transcription: { model: "openai/gpt-4o-mini-transcribe" } } }));
    const chunk = Buffer.from(pseudoAudio(48_000)).toString("base64"); // 1 s of 24 kHz pcm16
    for (let i = 0; i < 10; i++) s.ws.send(JSON.stringify({ type: "input_audio_buffer.append", audio: chunk }));
    s.ws.send(JSON.stringify({ type: "input_audio_buffer.commit" }));
    await waitFor(s, (m) => String(m).includes("transcription.completed"));
    // The vendor spoke first (session created) before the client's handshake completed: not lost.
    expect(String(s.received[0])).toContain("transcription_session.created");
    s.ws.close(1000);
    const seen = openai.seen[0];
    expect(seen?.query.get("model")).toBe("gpt-4o-mini-transcribe");
    expect(JSON.parse(String(seen?.frames[0])).session.input_audio_transcription.model).toBe("gpt-4o-mini-transcribe");
    expectProviderKeyOnly(openai);
    const [row] = await settledStream(app, requestIdOf(s));
    // gpt-4o-mini-transcribe at $0.003/min: 10 s.
    expect(row).toMatchObject({ model_id: "openai/gpt-4o-mini-transcribe", audio_seconds: 10, cost_usd: "0.0005000000", rated_price_usd: "0.0006250000" });
  });
});

describe("recording of WebSocket calls", () => {
  it("files streams under the key's tenant, invisible to another tenant", async () => {
    const a = opened(await openWs(`${ws()}${LISTEN}`, { headers: token(ACME_KEY) }));
    await streamListen(a, 1);
    const [row] = await settledStream(app, requestIdOf(a));
    expect(row?.tenant_id).toBe("acme");
    const globexLogs = await (await app.call("GET", "/v1/logs?limit=1000", { key: GLOBEX_KEY })).text();
    expect(globexLogs).not.toContain(requestIdOf(a));
  });

  it("today_spend of the project equals the sum of its recorded costs after WebSocket calls", async () => {
    const s = opened(await openWs(`${ws()}${LISTEN}`, { headers: token() }));
    await streamListen(s, 3);
    await settledStream(app, requestIdOf(s));
    // The operator's view of the project spans every tenant's calls filed under it.
    const rows = (await recordedRows(app)).filter((r) => r.project === "ws-proj");
    const detail = (await (await app.call("GET", "/v1/projects/ws-proj", { key: OPERATOR_KEY })).json()) as { today_spend: number };
    expect(rows.length).toBeGreaterThan(3);
    expect(detail.today_spend).toBeCloseTo(sum(rows, (r) => r.cost_usd), 10);
  });

  it("writes usage checkpoints while a stream runs, whose units sum to the stream's", async () => {
    const quick = await gatewayApp(YAML("gateway: { ws_checkpoint_interval_ms: 40 }"));
    try {
      const s = opened(await openWs(`${quick.base.replace("http://", "ws://")}${LISTEN}`, { headers: token() }));
      for (let i = 0; i < 10; i++) {
        s.ws.send(pseudoAudio(3200, i + 1)); // 0.1 s each
        await new Promise((r) => setTimeout(r, 25));
      }
      // A checkpoint row is in the store while the stream is still open: a budget sees a long call.
      let mid = await streamRowsNow(quick, requestIdOf(s));
      while (mid.length === 0) {
        await new Promise((r) => setTimeout(r, 20));
        mid = await streamRowsNow(quick, requestIdOf(s));
      }
      expect(s.ws.readyState).toBe(s.ws.OPEN);
      s.ws.send(JSON.stringify({ type: "CloseStream" }));
      await s.closed;
      const rows = await settledStream(quick, requestIdOf(s));
      expect(rows.length).toBeGreaterThan(1);
      expect(sum(rows, (r) => r.audio_seconds)).toBeCloseTo(1, 9);
      expect(new Set(rows.map((r) => r.metadata?.stream_id ?? r.id))).toEqual(new Set([requestIdOf(s)]));
    } finally {
      await quick.close();
    }
  });
});

describe("budgets and long streams", () => {
  it("a stream's checkpoints trip a block budget mid-call: the next upgrade is refused while it still runs", async () => {
    const yaml = YAML("gateway: { ws_checkpoint_interval_ms: 40 }").replace(
      "ws-proj: { default_stack: voice }",
      "ws-proj: { default_stack: voice }\n  capped: { daily_budget: 0.0001, budget_action: block }",
    );
    const quick = await gatewayApp(yaml);
    try {
      const base = quick.base.replace("http://", "ws://");
      const s = opened(await openWs(`${base}${LISTEN}`, { headers: token(OPERATOR_KEY, "capped") }));
      // 2 s of audio = $0.000257 of nova-3, over the $0.0001 budget; the stream stays open.
      for (let i = 0; i < 20; i++) {
        s.ws.send(pseudoAudio(3200, i + 1));
        await new Promise((r) => setTimeout(r, 10));
      }
      let status = 0;
      for (let i = 0; i < 100 && status !== 402; i++) {
        const r = await openWs(`${base}${LISTEN}`, { headers: token(OPERATOR_KEY, "capped") });
        if ("status" in r) status = r.status;
        else r.ws.terminate();
        if (status !== 402) await new Promise((res) => setTimeout(res, 30));
      }
      expect(status).toBe(402);
      expect(s.ws.readyState).toBe(s.ws.OPEN);
      s.ws.close(1000);
      await s.closed;
    } finally {
      await quick.close();
    }
  });
});

async function streamRowsNow(t: TestApp, id: string) {
  return (await recordedRows(t)).filter((r) => r.metadata?.stream_id === id);
}

async function ttsAudio(text: string): Promise<Uint8Array> {
  const { ttsAudioFor } = await import("../support/stubs/deepgram.js");
  return ttsAudioFor(text);
}
