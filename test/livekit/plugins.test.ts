import { EventEmitter } from "node:events";
import { globalAgent } from "node:https";
import { initializeLogger, llm as lkllm, tts as lktts } from "@livekit/agents";
import { AudioFrame } from "@livekit/rtc-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as cartesiaPlugin from "@livekit/agents-plugin-cartesia";
import * as deepgramPlugin from "@livekit/agents-plugin-deepgram";
import * as openaiPlugin from "@livekit/agents-plugin-openai";
import { attach, closeAttachClients, GatewayModelError, PluginMissingError, type VoxgateGateway, voxgateGateway } from "../../src/livekit/index.js";
import { requirePlugin } from "../../src/livekit/plugins.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY } from "../gateway/support.js";
import type { TestApp } from "../support/app.js";
import { pseudoAudio } from "../support/stubs/audio.js";
import { CartesiaStub } from "../support/stubs/cartesia.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { ElevenLabsStub } from "../support/stubs/elevenlabs.js";
import { OpenAIAudioStub } from "../support/stubs/openai-audio.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import { presentedKeys, type StubServer } from "../support/stubs/vendor-stub.js";
import { rowsWhere, tlsTerminator } from "./support.js";

/**
 * Each plugin instance voxgateGateway builds, run through its real request path (the plugin's own
 * HTTP, SSE and WebSocket code) into a Voxgate on loopback, to the loopback stub vendors; the rows
 * show the model, units and price. Prices: catalog × default_markup 1.25.
 */
initializeLogger({ pretty: false, level: "error" });

const chat = openaiChatStub();
const chatB = openaiChatStub({ prompt_tokens: 20, completion_tokens: 5, cached_tokens: 0 });
const deepgram = new DeepgramStub();
const elevenlabs = new ElevenLabsStub();
const cartesia = new CartesiaStub();
const openaiAudio = new OpenAIAudioStub();
const audioStubs: StubServer[] = [deepgram, elevenlabs, cartesia, openaiAudio];
let app: TestApp & { base: string };
let tls: Awaited<ReturnType<typeof tlsTerminator>>;
let gw: VoxgateGateway;

const VOICE = "a0e99841-438c-4a64-b679-ae501e7d6091";
const INFER_ONLY_KEY = "lk-infer-only-key-0123456789";
const YAML = () => `${KEYS_YAML.replace("auth:\n  api_keys:\n", `auth:\n  api_keys:\n    - { key: ${INFER_ONLY_KEY}, scopes: [infer] }\n`)}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${chat.url}/v1" }
  groq: { api_key: "${PROVIDER_KEY}", base_url: "${chatB.url}/v1" }
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${elevenlabs.url}/v1" }
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${cartesia.url}" }
  openai-audio: { type: openai, api_key: "${PROVIDER_KEY}", base_url: "${openaiAudio.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
    groq/llama-3.1-8b-instant: { provider: groq, model: llama-3.1-8b-instant }
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
    openai-audio/gpt-4o-mini-transcribe: { provider: openai-audio, model: gpt-4o-mini-transcribe }
  tts:
    openai-audio/tts-1: { provider: openai-audio, model: tts-1 }
    deepgram/aura-2-thalia-en: { provider: deepgram, model: aura-2-thalia-en }
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
    cartesia/sonic-2: { provider: cartesia, model: sonic-2 }
stacks:
  fast: { stt: deepgram/nova-3, llm: openai/gpt-4.1-mini, tts: cartesia/sonic-2 }
projects:
  lk-proj: { default_stack: fast }
pricing:
  catalog:
    cartesia/sonic-2: { price_usd: 0.03 }
    groq/llama-3.1-8b-instant: { input_price_usd: 0.05, output_price_usd: 0.08 }
`;

beforeAll(async () => {
  await Promise.all([chat.start(), chatB.start(), ...audioStubs.map((s) => s.start())]);
  app = await gatewayApp(YAML());
  tls = await tlsTerminator(Number(new URL(app.base).port));
  globalAgent.options.ca = tls.ca; // Cartesia's synthesize() uses node:https with the global agent
  gw = voxgateGateway({ url: app.base, apiKey: OPERATOR_KEY, project: "lk-proj", sessionId: "lk-call-1" });
});
afterAll(async () => {
  await closeAttachClients();
  await app?.close();
  await tls?.close();
  await Promise.all([chat.close(), chatB.close(), ...audioStubs.map((s) => s.stop())]);
});
beforeEach(() => {
  for (const s of audioStubs) s.reset();
});

function expectProviderKeyOnly(stub: StubServer) {
  const seen = JSON.stringify(stub.seen.map((r) => ({ h: r.headers, q: r.query.toString() })));
  expect(seen).not.toContain(OPERATOR_KEY);
  expect(presentedKeys(stub.seen.at(-1) as NonNullable<(typeof stub.seen)[number]>).join(" ")).toContain(PROVIDER_KEY);
}

async function chatText(model: lkllm.LLM): Promise<string> {
  const chatCtx = new lkllm.ChatContext();
  chatCtx.addMessage({ role: "user", content: "hi" });
  let text = "";
  for await (const chunk of model.chat({ chatCtx })) text += chunk.delta?.content ?? "";
  return text;
}

async function drainTts(stream: AsyncIterable<unknown>): Promise<number> {
  let frames = 0;
  for await (const ev of stream) {
    if (ev === lktts.SynthesizeStream.END_OF_STREAM) break;
    if (ev && typeof ev === "object" && "frame" in ev) frames++;
  }
  return frames;
}

describe("option fragments", () => {
  it("put project and session in the base-URL prefix, in each plugin's own option names", () => {
    const base = `${app.base}/p/lk-proj/s/lk-call-1`;
    expect(gw.openai()).toEqual({ baseURL: `${base}/openai/v1`, apiKey: OPERATOR_KEY });
    expect(gw.deepgram()).toEqual({ baseUrl: `${base}/deepgram`, apiKey: OPERATOR_KEY });
    expect(gw.elevenlabs()).toEqual({ baseURL: `${base}/elevenlabs/v1`, apiKey: OPERATOR_KEY });
    expect(gw.cartesia()).toEqual({ baseUrl: `${base}/cartesia`, apiKey: OPERATOR_KEY });
    expect(voxgateGateway({ url: `${app.base}/`, apiKey: "k" }).openai().baseURL).toBe(`${app.base}/openai/v1`);
    expect(voxgateGateway({ url: app.base, apiKey: "k", project: "a b", sessionId: "c/d" }).base).toBe(`${app.base}/p/a%20b/s/c%2Fd`);
  });
});

describe("factories", () => {
  it("gw.stack() builds the stack's stt, llm and tts plugins, each pointed at the gateway", async () => {
    const stack = await gw.stack("fast");
    expect(stack.stt).toBeInstanceOf(deepgramPlugin.STT);
    expect(stack.llm).toBeInstanceOf(openaiPlugin.LLM);
    expect(stack.tts).toBeInstanceOf(cartesiaPlugin.TTS);
    expect(stack.llm.model).toBe("openai/gpt-4.1-mini");
    expect(stack.llm.provider).toBe(new URL(app.base).host);
  });

  it("names the routable models when a model is unknown or of another modality", async () => {
    await expect(gw.llm("openai/gpt-nope")).rejects.toThrow(GatewayModelError);
    await expect(gw.llm("openai/gpt-nope")).rejects.toThrow(/routable llm models: openai\/gpt-4.1-mini, groq\/llama-3.1-8b-instant/);
    await expect(gw.tts("deepgram/nova-3")).rejects.toThrow(/deepgram\/nova-3 is a stt model/);
    await expect(gw.stack("nope")).rejects.toThrow(/no stack "nope" \(stacks: fast\)/);
  });

  it("an infer-only key reads a partial table and still builds a model by its provider prefix", async () => {
    const infer = voxgateGateway({ url: app.base, apiKey: INFER_ONLY_KEY });
    const table = await infer.models();
    expect(table.complete).toBe(false);
    expect(await infer.stt("deepgram/nova-3")).toBeInstanceOf(deepgramPlugin.STT);
  });

  it("says which package to install when a plugin is missing", async () => {
    const missing = "@livekit/agents-plugin-not-installed";
    const err = await requirePlugin(missing, () => import(missing), "acme/model-1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PluginMissingError);
    expect((err as Error).message).toBe(`acme/model-1 needs the LiveKit package ${missing}: npm install ${missing}`);
  });
});

describe("openai.LLM through /openai/v1", () => {
  it("streams a chat completion and records its tokens and price under the project and session", async () => {
    const llm = await gw.llm("openai/gpt-4.1-mini");
    expect(await chatText(llm)).toBe("Hello there!");
    expect(chat.hits.at(-1)?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    const [row] = await rowsWhere(app, (r) => r.model_id === "openai/gpt-4.1-mini" && r.session_id === "lk-call-1");
    // (8 uncached × 0.4 + 4 cached × 0.1 + 5 out × 1.6) / 1e6
    expect(row).toMatchObject({ project: "lk-proj", status: "success", input_tokens: 12, cached_input_tokens: 4, output_tokens: 5, cost_usd: "0.0000116000" });
    expect(row?.ttfb_ms).not.toBeNull();
  });

  it("falls back across vendors with LiveKit's FallbackAdapter when the first answers 500", async () => {
    chat.script({ status: 500 });
    const llm = await gw.llm(["openai/gpt-4.1-mini", "groq/llama-3.1-8b-instant"]);
    expect(llm).toBeInstanceOf(lkllm.FallbackAdapter);
    expect(await chatText(llm)).toBe("Hello there!");
    const rows = await rowsWhere(app, (r) => r.session_id === "lk-call-1" && (r.status === "error" || r.model_id.startsWith("groq/")), 2);
    expect(rows.map((r) => [r.model_id, r.status])).toEqual([
      ["openai/gpt-4.1-mini", "error"],
      ["groq/llama-3.1-8b-instant", "success"],
    ]);
  });
});

describe("deepgram.STT through /deepgram (WebSocket live)", () => {
  it("streams audio frames and records the seconds Deepgram reported, with their price", async () => {
    const stt = await gw.stt("deepgram/nova-3");
    const stream = stt.stream();
    // 3 s of 16 kHz mono 16-bit audio in 100 ms frames.
    for (let i = 0; i < 30; i++) {
      const pcm = pseudoAudio(3200, i + 1);
      stream.pushFrame(new AudioFrame(new Int16Array(pcm.buffer, pcm.byteOffset, 1600), 16000, 1, 1600));
    }
    // The plugin connects when its stream runs: end the input once the vendor has the 3 s.
    while ((deepgram.truth[0]?.audioSeconds ?? 0) < 3) await new Promise((r) => setTimeout(r, 10));
    stream.endInput();
    for await (const _ev of stream) {
      // the plugin's speech events; the units are the gateway's
    }
    const [row] = await rowsWhere(app, (r) => r.model_id === "deepgram/nova-3");
    expect(deepgram.truth[0]?.audioSeconds).toBe(3);
    expect(deepgram.seen[0]?.query.get("model")).toBe("nova-3");
    expectProviderKeyOnly(deepgram);
    // nova-3 at $0.0077/min: 3 s
    expect(row).toMatchObject({ project: "lk-proj", session_id: "lk-call-1", status: "success", audio_seconds: 3, cost_usd: "0.0003850000" });
  });
});

describe("openai.STT and openai.TTS through /openai/v1", () => {
  it("STT streams over the realtime transcription WebSocket; the row has the audio sent", async () => {
    const stt = await gw.stt("openai-audio/gpt-4o-mini-transcribe");
    expect(stt).toBeInstanceOf(openaiPlugin.STT);
    const stream = stt.stream();
    // 2 s of 24 kHz mono 16-bit audio (the realtime API's own rate) in 100 ms frames.
    for (let i = 0; i < 20; i++) {
      const pcm = pseudoAudio(4800, i + 1);
      stream.pushFrame(new AudioFrame(new Int16Array(pcm.buffer, pcm.byteOffset, 2400), 24000, 1, 2400));
    }
    const appended = () => (openaiAudio.seen[0]?.frames ?? []).filter((f) => typeof f === "string" && f.includes("input_audio_buffer.append")).length;
    while (appended() < 40) await new Promise((r) => setTimeout(r, 10)); // 50 ms appends
    stream.endInput();
    for await (const _ev of stream) {
      // the plugin's speech events; the units are the gateway's
    }
    expect(openaiAudio.seen[0]?.path).toBe("/v1/realtime");
    expect(openaiAudio.seen[0]?.query.get("intent")).toBe("transcription");
    expectProviderKeyOnly(openaiAudio);
    const [row] = await rowsWhere(app, (r) => r.model_id === "openai-audio/gpt-4o-mini-transcribe" && r.metadata?.stream_id === undefined);
    expect(row).toMatchObject({ project: "lk-proj", session_id: "lk-call-1" });
    expect(row?.audio_seconds).toBeCloseTo(2, 9); // the appended bytes: 2 s at 24 kHz pcm16
  });

  it("TTS synthesize() posts to audio/speech and records the characters", async () => {
    const tts = await gw.tts("openai-audio/tts-1:alloy");
    const text = "Sixty characters of speech, enough for one 100 ms PCM frame.";
    expect(await drainTts(tts.synthesize(text))).toBeGreaterThan(0);
    expect(openaiAudio.seen[0]?.path).toBe("/v1/audio/speech");
    expect(JSON.parse(Buffer.from(openaiAudio.seen[0]?.body ?? new Uint8Array()).toString("utf8"))).toMatchObject({ model: "tts-1", voice: "alloy", input: text });
    const [row] = await rowsWhere(app, (r) => r.model_id === "openai-audio/tts-1");
    expect(row).toMatchObject({ project: "lk-proj", session_id: "lk-call-1", characters: [...text].length });
  });
});

describe("deepgram.TTS through /deepgram", () => {
  // Its synthesize() speaks HTTPS to port 443 of the base URL's host (path kept): behind a TLS
  // terminator on 443 only, so this test runs stream(), which follows the base URL.
  it("stream() speaks over the /v1/speak WebSocket and records the characters", async () => {
    const tts = await gw.tts("deepgram/aura-2-thalia-en");
    expect(tts).toBeInstanceOf(deepgramPlugin.TTS);
    const stream = tts.stream();
    stream.pushText("Deepgram speaks these words for the caller now. ");
    stream.flush();
    stream.endInput();
    expect(await drainTts(stream)).toBeGreaterThan(0);
    await tts.close();
    expect(deepgram.seen[0]?.path).toBe("/v1/speak");
    expect(deepgram.seen[0]?.query.get("model")).toBe("aura-2-thalia-en");
    expectProviderKeyOnly(deepgram);
    const sent = deepgram.truth.reduce((a, t) => a + (t.characters ?? 0), 0);
    expect(sent).toBeGreaterThan(0);
    const rows = await rowsWhere(app, (r) => r.model_id === "deepgram/aura-2-thalia-en");
    expect(rows.reduce((a, r) => a + Number(r.characters ?? 0), 0)).toBe(sent);
    expect(rows[0]).toMatchObject({ project: "lk-proj", session_id: "lk-call-1" });
  });
});

describe("elevenlabs.TTS through /elevenlabs/v1", () => {
  it("synthesize() posts to /stream and records the characters", async () => {
    const tts = await gw.tts(`elevenlabs/eleven_flash_v2_5:${VOICE}`);
    const text = "Hello from the gateway, twenty!"; // 31 characters
    expect(await drainTts(tts.synthesize(text))).toBeGreaterThan(0);
    expect(elevenlabs.seen[0]?.path).toBe(`/v1/text-to-speech/${VOICE}/stream`);
    expectProviderKeyOnly(elevenlabs);
    const [row] = await rowsWhere(app, (r) => r.model_id === "elevenlabs/eleven_flash_v2_5" && r.characters === 31);
    // eleven_flash_v2_5 at $0.05/1k characters
    expect(row).toMatchObject({ project: "lk-proj", session_id: "lk-call-1", cost_usd: "0.0015500000" });
  });
  it("stream() speaks over the multi-stream-input WebSocket and records the characters sent", async () => {
    const tts = await gw.tts(`elevenlabs/eleven_flash_v2_5:${VOICE}`);
    const stream = tts.stream();
    stream.pushText("Streaming words to the voice. ");
    stream.flush();
    stream.endInput();
    expect(await drainTts(stream)).toBeGreaterThan(0);
    await tts.close();
    expect(elevenlabs.seen[0]?.path).toBe(`/v1/text-to-speech/${VOICE}/multi-stream-input`);
    expect(elevenlabs.seen[0]?.query.get("model_id")).toBe("eleven_flash_v2_5");
    expectProviderKeyOnly(elevenlabs);
    const sent = elevenlabs.truth.reduce((a, t) => a + (t.characters ?? 0), 0);
    expect(sent).toBeGreaterThan(0);
    const rows = await rowsWhere(app, (r) => r.model_id === "elevenlabs/eleven_flash_v2_5" && r.metadata?.stream_id === undefined && r.characters === sent);
    expect(rows[0]).toMatchObject({ project: "lk-proj", session_id: "lk-call-1", status: "success" });
  });
});

describe("cartesia.TTS through /cartesia", () => {
  // The plugin names its model only inside each message, so Voxgate takes the stream's model from
  // the project's default_stack when it connects (lk-proj: fast → cartesia/sonic-2).
  it("stream() speaks over the WebSocket under the attributed prefix", async () => {
    const tts = await gw.tts(`cartesia/sonic-2:${VOICE}`);
    const stream = tts.stream();
    stream.pushText("Twenty characters!! ");
    stream.flush();
    stream.endInput();
    expect(await drainTts(stream)).toBeGreaterThan(0);
    await tts.close();
    expect(cartesia.seen[0]?.path).toBe("/tts/websocket");
    expectProviderKeyOnly(cartesia);
    const rows = await rowsWhere(app, (r) => r.model_id === "cartesia/sonic-2" && r.session_id === "lk-call-1");
    const chars = rows.reduce((a, r) => a + Number(r.characters ?? 0), 0);
    expect(chars).toBe(cartesia.truth.reduce((a, t) => a + (t.characters ?? 0), 0));
    expect(chars).toBeGreaterThan(0);
  });

  it("synthesize() reaches the root /tts/bytes over TLS (its fixed path), recorded with its price", async () => {
    const tlsGw = voxgateGateway({ url: `https://127.0.0.1:${tls.port}`, apiKey: OPERATOR_KEY, project: "lk-proj", sessionId: "lk-call-1" });
    const tts = await voxgateGateway({ url: app.base, apiKey: OPERATOR_KEY }).tts(`cartesia/sonic-2:${VOICE}`, { ...tlsGw.cartesia() });
    const text = "x".repeat(100);
    expect(await drainTts(tts.synthesize(text))).toBeGreaterThan(0);
    expect(cartesia.seen[0]?.path).toBe("/tts/bytes");
    const [row] = await rowsWhere(app, (r) => r.model_id === "cartesia/sonic-2" && r.characters === 100);
    expect(row).toMatchObject({ cost_usd: "0.0030000000" });
  });
});

describe("a LiveKit session through Voxgate, metered by attach()", () => {
  it("shows the plugin's record in /v1/logs, its session in /v1/sessions and its turn in /v1/rooms/{room}/latency, recorded once", async () => {
    const call = gw.forSession("lk-call-e2e");
    const llm = await call.llm("openai/gpt-4.1-mini");
    // An AgentSession-shaped emitter, wired the way LiveKit's AgentActivity forwards a component's metrics.
    const session = new EventEmitter();
    llm.on("metrics_collected", (metrics) => session.emit("metrics_collected", { type: "metrics_collected", metrics, createdAt: Date.now() }));
    const handle = attach(session, { gateway: call, collectorUrl: app.base, apiKey: OPERATOR_KEY, roomName: "room-e2e", heartbeatIntervalMs: 0 });
    expect(handle.sessionId).toBe("lk-call-e2e");

    const t0 = Date.now();
    const state = (kind: "user" | "agent", newState: string, at: number) =>
      session.emit(`${kind}_state_changed`, { type: `${kind}_state_changed`, oldState: "listening", newState, createdAt: t0 + at });
    state("user", "speaking", 0);
    state("user", "listening", 800);
    expect(await chatText(llm)).toBe("Hello there!");
    state("agent", "speaking", 1300);
    state("agent", "listening", 2300);
    session.emit("close", { type: "close", error: null, reason: "participant_disconnected", createdAt: t0 + 2400 });
    await handle.flush();

    const rows = await rowsWhere(app, (r) => r.session_id === "lk-call-e2e");
    expect(rows).toHaveLength(1); // the gateway's row only: attach skipped the plugin's own metrics
    expect(handle.stats()).toMatchObject({ records: 0, skippedGateway: 1, turns: 1 });

    const get = async <T>(path: string): Promise<T> => {
      const res = await fetch(`${app.base}${path}`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as T;
    };
    const logs = await get<{ id: string; session_id: string; model_id: string; project: string; cost_usd: number }[]>("/v1/logs?limit=100&project=lk-proj");
    expect(logs.find((l) => l.id === rows[0]?.id)).toMatchObject({ session_id: "lk-call-e2e", model_id: "openai/gpt-4.1-mini", project: "lk-proj" });
    const sessions = await get<{ id?: string; session_id?: string }[]>("/v1/sessions");
    expect(sessions.some((s) => (s.id ?? s.session_id) === "lk-call-e2e")).toBe(true);
    const latency = await get<{ turns: { turn_index: number; response_speed_ms: number | null }[]; turn_count: number }>("/v1/rooms/room-e2e/latency");
    expect(latency.turn_count).toBe(1);
    expect(latency.turns).toMatchObject([{ turn_index: 0, response_speed_ms: 500 }]);
  });
});
