import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { pseudoAudio } from "../support/stubs/audio.js";
import { CartesiaStub } from "../support/stubs/cartesia.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { ElevenLabsStub } from "../support/stubs/elevenlabs.js";
import { OpenAIAudioStub } from "../support/stubs/openai-audio.js";
import type { StubServer } from "../support/stubs/vendor-stub.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";
import { type OpenSocket, openWs, opened, settledStream, waitFor } from "./ws-support.js";

/**
 * Models named inside messages (Cartesia's per-generation model_id, OpenAI realtime session.update),
 * never silently replaced, and the vendors' in-band errors recorded with what was really served.
 * Real sockets through a real Voxgate against loopback vendor stubs.
 */
const cartesia = new CartesiaStub();
const openai = new OpenAIAudioStub();
const deepgram = new DeepgramStub();
const elevenlabs = new ElevenLabsStub();
const stubs: StubServer[] = [cartesia, openai, deepgram, elevenlabs];

beforeAll(async () => {
  await Promise.all(stubs.map((s) => s.start()));
});
afterAll(async () => {
  await Promise.all(stubs.map((s) => s.stop()));
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${cartesia.url}" }
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${openai.url}/v1" }
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${elevenlabs.url}/v1" }
models:
  stt:
    openai/gpt-4o-mini-transcribe: { provider: openai, model: gpt-4o-mini-transcribe }
    openai/gpt-4o-transcribe: { provider: openai, model: gpt-4o-transcribe }
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
  tts:
    cartesia/sonic-2: { provider: cartesia, model: sonic-2 }
    cartesia/sonic-3: { provider: cartesia, model: sonic-3 }
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
stacks:
  voice: { stt: openai/gpt-4o-mini-transcribe, tts: cartesia/sonic-2 }
projects:
  bare: {}
  stacked: { default_stack: voice }
pricing:
  catalog:
    cartesia/sonic-2: { price_usd: 0.03 }
    cartesia/sonic-3: { modality: tts, price_usd: 0.03 }
`,
}));
beforeEach(() => {
  for (const s of stubs) s.reset();
});
const ws = () => app.base.replace("http://", "ws://");
const requestIdOf = (s: OpenSocket) => String(s.headers["x-voxgate-request-id"]);
const json = (m: string | Buffer) => JSON.parse(String(m)) as Record<string, unknown>;
const generation = (context: string, model: string, transcript: string) =>
  JSON.stringify({ context_id: context, model_id: model, transcript, continue: false, voice: { mode: "id", id: "v" }, output_format: { container: "raw", encoding: "pcm_s16le", sample_rate: 24000 } });

async function streamRowsSettled(id: string) {
  await settledStream(app, id);
  // Lines beside the stream's own row (other models, failed or refused generations) carry its stream_id.
  return (await recordedRows(app)).filter((r) => r.id === id || r.metadata?.stream_id === id);
}

describe("Cartesia: the model of each generation request", () => {
  it("upgrades with no model on the URL and no default_stack, switches models per generation, refuses unservable ones in-band", async () => {
    const s = opened(await openWs(`${ws()}/cartesia/tts/websocket?cartesia_version=2025-04-16`, { headers: { "x-api-key": OPERATOR_KEY, "x-voxgate-project": "bare" } }));
    s.ws.send(generation("a", "cartesia/sonic-2", "x".repeat(10)));
    await waitFor(s, (m) => String(m).includes('"done"') && json(m).context_id === "a");
    s.ws.send(generation("b", "sonic-3", "y".repeat(20)));
    await waitFor(s, (m) => String(m).includes('"done"') && json(m).context_id === "b");
    s.ws.send(generation("c", "cartesia/nope-9", "z".repeat(30)));
    const refusedC = json(await waitFor(s, (m) => json(m).context_id === "c"));
    expect(refusedC).toMatchObject({ type: "error", context_id: "c", status_code: 404 });
    s.ws.send(generation("d", "elevenlabs/eleven_flash_v2_5", "w".repeat(40)));
    const refusedD = json(await waitFor(s, (m) => json(m).context_id === "d"));
    expect(refusedD).toMatchObject({ type: "error", context_id: "d" });
    s.ws.send(generation("e", "sonic-2", "v".repeat(5)));
    await waitFor(s, (m) => String(m).includes('"done"') && json(m).context_id === "e");
    s.ws.close(1000);
    await s.closed;

    // Only servable generations reached the vendor, each under its own vendor model name.
    expect(cartesia.seen[0]?.frames.map((f) => json(String(f)).model_id)).toEqual(["sonic-2", "sonic-3", "sonic-2"]);
    const rows = await streamRowsSettled(requestIdOf(s));
    const byModel = (m: string, status: string) => rows.filter((r) => r.model_id === m && r.status === status);
    expect(byModel("cartesia/sonic-2", "success")).toEqual([expect.objectContaining({ id: requestIdOf(s), characters: 15, project: "bare" })]);
    expect(byModel("cartesia/sonic-3", "success")).toEqual([expect.objectContaining({ characters: 20 })]);
    expect(byModel("cartesia/nope-9", "error")[0]?.error_message).toContain("refused in-band");
    expect(byModel("elevenlabs/eleven_flash_v2_5", "error")[0]?.error_message).toContain("refused in-band");
  });

  it("a generation the vendor fails before any audio is recorded as error with its message and 0 characters", async () => {
    const s = opened(await openWs(`${ws()}/cartesia/tts/websocket`, { headers: { "x-api-key": OPERATOR_KEY, "x-voxgate-project": "bare" } }));
    s.ws.send(generation("ok", "sonic-2", "hello"));
    await waitFor(s, (m) => String(m).includes('"done"'));
    s.ws.send(generation("bad", "sonic-2", "this will FAIL"));
    expect(json(await waitFor(s, (m) => json(m).context_id === "bad"))).toMatchObject({ type: "error", message: "stub generation failed" });
    s.ws.close(1000);
    const rows = await streamRowsSettled(requestIdOf(s));
    expect(rows.find((r) => r.id === requestIdOf(s))).toMatchObject({ status: "success", characters: 5 });
    expect(rows.find((r) => r.status === "error")).toMatchObject({ model_id: "cartesia/sonic-2", characters: 0, error_message: "stub generation failed" });
  });
});

describe("OpenAI realtime transcription: the model of session.update", () => {
  const url = () => `${ws()}/openai/v1/realtime?intent=transcription`;
  const bearer = (project: string) => ({ authorization: `Bearer ${OPERATOR_KEY}`, "x-voxgate-project": project });
  const update = (model: string, eventId = "evt_1") => JSON.stringify({ type: "session.update", event_id: eventId, session: { type: "transcription", audio: { input: { format: { type: "audio/pcm", rate: 24000 }, transcription: { model } } } } });
  const second = Buffer.from(pseudoAudio(48_000)).toString("base64");

  it("opens the vendor socket for the model the first session.update names; refuses another model in-band", async () => {
    const s = opened(await openWs(url(), { headers: bearer("bare") }));
    s.ws.send(update("openai/gpt-4o-mini-transcribe"));
    s.ws.send(JSON.stringify({ type: "input_audio_buffer.append", audio: second }));
    s.ws.send(JSON.stringify({ type: "input_audio_buffer.commit" }));
    await waitFor(s, (m) => String(m).includes("transcription.completed"));
    s.ws.send(update("openai/gpt-4o-transcribe", "evt_swap"));
    const err = json(await waitFor(s, (m) => String(m).includes('"error"')));
    expect(err).toMatchObject({ type: "error", error: { event_id: "evt_swap", type: "invalid_request_error" } });
    s.ws.close(1000);
    await s.closed;
    expect(openai.seen).toHaveLength(1);
    expect(openai.seen[0]?.query.get("model")).toBe("gpt-4o-mini-transcribe");
    const sentUpdates = (openai.seen[0]?.frames ?? []).map(String).filter((f) => f.includes("session.update"));
    expect(sentUpdates).toHaveLength(1);
    expect(json(sentUpdates[0] as string)).toMatchObject({ session: { audio: { input: { transcription: { model: "gpt-4o-mini-transcribe" } } } } });
    const rows = await streamRowsSettled(requestIdOf(s));
    expect(rows.find((r) => r.id === requestIdOf(s))).toMatchObject({ model_id: "openai/gpt-4o-mini-transcribe", audio_seconds: 1, status: "success" });
    expect(rows.find((r) => r.model_id === "openai/gpt-4o-transcribe")).toMatchObject({ status: "error" });
  });

  it("audio before any model: the default_stack's model, or an in-band model_not_found with no vendor contacted", async () => {
    const bare = opened(await openWs(url(), { headers: bearer("bare") }));
    bare.ws.send(JSON.stringify({ type: "input_audio_buffer.append", event_id: "evt_a", audio: second }));
    expect(json(await waitFor(bare, (m) => String(m).includes('"error"')))).toMatchObject({ type: "error", error: { code: "model_not_found", event_id: "evt_a" } });
    expect(openai.seen).toHaveLength(0);
    // The stream stays open: naming a model now serves it.
    bare.ws.send(update("openai/gpt-4o-mini-transcribe"));
    await waitFor(bare, (m) => String(m).includes("session.created"));
    bare.ws.close(1000);

    const stacked = opened(await openWs(url(), { headers: bearer("stacked") }));
    stacked.ws.send(JSON.stringify({ type: "input_audio_buffer.append", audio: second }));
    stacked.ws.send(JSON.stringify({ type: "input_audio_buffer.commit" }));
    await waitFor(stacked, (m) => String(m).includes("transcription.completed"));
    stacked.ws.close(1000);
    const [row] = await settledStream(app, requestIdOf(stacked));
    expect(row).toMatchObject({ model_id: "openai/gpt-4o-mini-transcribe", audio_seconds: 1 });
  });

  it("an error event from the vendor marks the stream error with the vendor's message", async () => {
    const s = opened(await openWs(`${url()}&model=openai/gpt-4o-mini-transcribe`, { headers: bearer("bare") }));
    s.ws.send(JSON.stringify({ type: "stub.fail" }));
    await waitFor(s, (m) => String(m).includes("stub transcription failed"));
    s.ws.close(1000);
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row).toMatchObject({ status: "error", error_message: "stub transcription failed" });
  });
});

describe("in-band vendor errors", () => {
  it("Deepgram's error frame and close 1011: the stream is error with the vendor's message, its audio still counted", async () => {
    const s = opened(await openWs(`${ws()}/deepgram/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000`, { headers: { authorization: `Token ${OPERATOR_KEY}`, "x-voxgate-project": "bare" } }));
    s.ws.send(pseudoAudio(16_000));
    await waitFor(s, (m) => String(m).includes("Results"));
    s.ws.send(JSON.stringify({ type: "Boom" }));
    expect((await s.closed).code).toBe(1011);
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row).toMatchObject({ status: "error", audio_seconds: 0.5 });
    expect(row?.error_message).toBe("stub failure: no audio decoded — NET-0001");
  });

  it("ElevenLabs' error message: the stream is error, a context without audio bills 0 characters", async () => {
    const s = opened(await openWs(`${ws()}/elevenlabs/v1/text-to-speech/voice1/multi-stream-input?model_id=eleven_flash_v2_5`, { headers: { "xi-api-key": OPERATOR_KEY, "x-voxgate-project": "bare" } }));
    s.ws.send(JSON.stringify({ text: " ", context_id: "c1" }));
    s.ws.send(JSON.stringify({ text: "a".repeat(30), context_id: "c1" }));
    await waitFor(s, (m) => String(m).includes('"audio"'));
    s.ws.send(JSON.stringify({ text: "this will FAIL", context_id: "c2" }));
    expect((await s.closed).code).toBe(1008);
    const [row] = await settledStream(app, requestIdOf(s));
    expect(row).toMatchObject({ status: "error", characters: 30, error_message: "stub: invalid input" });
  });
});
