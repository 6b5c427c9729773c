import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { pseudoAudio, sha256, wavFile } from "../support/stubs/audio.js";
import { CartesiaStub } from "../support/stubs/cartesia.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { ElevenLabsStub } from "../support/stubs/elevenlabs.js";
import { OpenAIAudioStub } from "../support/stubs/openai-audio.js";
import { presentedKeys, type StubServer } from "../support/stubs/vendor-stub.js";
import { ACME_KEY, GLOBEX_KEY, INGEST_KEY, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

/**
 * The audio HTTP routes through a real Voxgate on loopback, against scriptable stub vendors: the real
 * `openai` SDK for transcription and speech, plain fetch for Deepgram, ElevenLabs and Cartesia.
 * Prices: catalog list prices × default_markup 1.25 (cartesia gets a catalog price here).
 */
const openaiStub = new OpenAIAudioStub();
const deepgram = new DeepgramStub();
const elevenlabs = new ElevenLabsStub();
const cartesia = new CartesiaStub();
const stubs: StubServer[] = [openaiStub, deepgram, elevenlabs, cartesia];

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
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${openaiStub.url}/v1" }
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${elevenlabs.url}/v1" }
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${cartesia.url}" }
models:
  stt:
    openai/whisper-1: { provider: openai, model: whisper-1 }
    openai/gpt-4o-transcribe: { provider: openai, model: gpt-4o-transcribe }
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
  tts:
    openai/tts-1: { provider: openai, model: tts-1 }
    deepgram/aura-2-thalia-en: { provider: deepgram, model: aura-2-thalia-en }
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
    cartesia/sonic-2: { provider: cartesia, model: sonic-2 }
pricing:
  catalog:
    cartesia/sonic-2: { price_usd: 0.03 }
    deepgram/aura-2-thalia-en: { modality: tts, price_usd: 0.03 }
`,
}));
beforeEach(() => {
  for (const s of stubs) s.reset();
});

const openai = (key = OPERATOR_KEY, headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey: key, baseURL: `${app.base}/openai/v1`, maxRetries: 0, defaultHeaders: headers });

async function rowById(id: string | null) {
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  const row = (await recordedRows(app)).find((r) => r.id === id);
  expect(row).toBeDefined();
  return row;
}

/** The stub saw the provider's key, and no Voxgate key anywhere. */
function expectProviderKeyOnly(stub: StubServer) {
  const req = stub.seen.at(-1);
  expect(req).toBeDefined();
  const seen = JSON.stringify({ h: req?.headers, q: req?.query.toString() });
  for (const k of [OPERATOR_KEY, ACME_KEY, GLOBEX_KEY]) expect(seen).not.toContain(k);
  expect(presentedKeys(req as NonNullable<typeof req>).join(" ")).toContain(PROVIDER_KEY);
}

function expectNoKeyInAnswer(res: Response) {
  const lines: string[] = [];
  res.headers.forEach((v, k) => {
    lines.push(`${k}: ${v}`);
  });
  const all = lines.join("\n");
  expect(all).not.toContain(PROVIDER_KEY);
  expect(all).not.toContain(OPERATOR_KEY);
}

describe("OpenAI audio through Voxgate (openai SDK)", () => {
  it("transcribes a WAV: file bytes reach the vendor unchanged, usage.seconds recorded and priced", async () => {
    const wav = wavFile(pseudoAudio(16_000 * 2 * 30), 16_000); // 30 s
    const { data, response } = await openai(OPERATOR_KEY, { "X-Voxgate-Project": "calls" })
      .audio.transcriptions.create({ file: await toFile(wav, "a.wav", { type: "audio/wav" }), model: "openai/whisper-1" })
      .withResponse();
    expect(data.text).toBe("stub transcript");
    expect(sha256(openaiStub.truth[0]?.audioIn ?? new Uint8Array())).toBe(sha256(wav));
    expectProviderKeyOnly(openaiStub);
    expectNoKeyInAnswer(response);
    const row = await rowById(response.headers.get("x-voxgate-request-id"));
    // whisper-1 at $0.006/min: 30 s = $0.003, × 1.25.
    expect(row).toMatchObject({ model_id: "openai/whisper-1", project: "calls", status: "success", audio_seconds: 30, cost_usd: "0.0030000000", rated_price_usd: "0.0037500000" });
  });

  it("records a token-billed transcription's tokens beside its seconds and rates it by tokens", async () => {
    const wav = wavFile(pseudoAudio(16_000 * 2 * 30), 16_000); // 30 s
    const { data, response } = await openai()
      .audio.transcriptions.create({ file: await toFile(wav, "a.wav", { type: "audio/wav" }), model: "gpt-4o-transcribe" })
      .withResponse();
    expect(data.text).toBe("stub transcript");
    expectProviderKeyOnly(openaiStub);
    const row = await rowById(response.headers.get("x-voxgate-request-id"));
    // 300 input tokens × $6 + 4 output × $10 per 1M (gpt-4o-transcribe's token prices), × 1.25; the WAV's 30 s kept beside.
    expect(row).toMatchObject({
      model_id: "openai/gpt-4o-transcribe",
      audio_seconds: 30,
      input_tokens: 300,
      output_tokens: 4,
      cost_usd: "0.0018400000",
      rated_price_usd: "0.0023000000",
    });
  });

  it("times a text-format transcription from the WAV upload (the answer carries no usage)", async () => {
    const wav = wavFile(pseudoAudio(16_000 * 2 * 6), 16_000);
    const { response } = await openai()
      .audio.transcriptions.create({ file: await toFile(wav, "a.wav"), model: "whisper-1", response_format: "text" })
      .withResponse();
    const row = await rowById(response.headers.get("x-voxgate-request-id"));
    expect(row?.audio_seconds).toBe(6);
  });

  it("streams speech: audio bytes unchanged, characters of input recorded and priced", async () => {
    const input = "a".repeat(150) + "é".repeat(50); // 200 characters
    const res = await openai().audio.speech.create({ model: "openai/tts-1", voice: "alloy", input });
    const audio = new Uint8Array(await res.arrayBuffer());
    expect(sha256(audio)).toBe(sha256(openaiStub.truth[0]?.audioOut ?? new Uint8Array()));
    expect(JSON.parse(Buffer.from(openaiStub.seen[0]?.body ?? []).toString()).model).toBe("tts-1");
    expectProviderKeyOnly(openaiStub);
    const row = await rowById(res.headers.get("x-voxgate-request-id"));
    // tts-1 at $0.015 per 1k characters.
    expect(row).toMatchObject({ model_id: "openai/tts-1", characters: 200, cost_usd: "0.0030000000", rated_price_usd: "0.0037500000" });
  });

  it("answers malformed audio requests with a 4xx, never a 5xx, and reaches no vendor", async () => {
    const bad: Array<[string, RequestInit]> = [
      ["/openai/v1/audio/speech", { method: "POST", body: "{not json", headers: { "content-type": "application/json" } }],
      ["/openai/v1/audio/speech", { method: "POST", body: JSON.stringify({ model: "tts-1", input: 5 }), headers: { "content-type": "application/json" } }],
      ["/openai/v1/audio/transcriptions", { method: "POST", body: "plain", headers: { "content-type": "text/plain" } }],
      ["/openai/v1/audio/transcriptions", { method: "POST", body: "--x\r\nbroken", headers: { "content-type": "multipart/form-data; boundary=x" } }],
      ["/openai/v1/audio/transcriptions", { method: "POST", body: '--x\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--x--\r\n', headers: { "content-type": "multipart/form-data; boundary=x" } }],
    ];
    for (const [path, init] of bad) {
      const res = await fetch(`${app.base}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${OPERATOR_KEY}` } });
      expect(res.status, `${path} ${String(init.body).slice(0, 30)}`).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
    expect(openaiStub.seen).toHaveLength(0);
  });
});

describe("Deepgram, ElevenLabs and Cartesia over HTTP", () => {
  it("Deepgram pre-recorded: raw linear16 passes unchanged, metadata.duration recorded and priced", async () => {
    const audio = pseudoAudio(16_000 * 2 * 60); // 60 s
    const res = await fetch(`${app.base}/deepgram/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000`, {
      method: "POST",
      headers: { authorization: `Token ${OPERATOR_KEY}`, "content-type": "audio/l16" },
      body: Buffer.from(audio),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { metadata: { duration: number } }).metadata.duration).toBe(60);
    expect(sha256(deepgram.truth.at(-1)?.audioIn ?? new Uint8Array())).toBe(sha256(audio));
    expect(deepgram.seen[0]?.query.get("model")).toBe("nova-3");
    expectProviderKeyOnly(deepgram);
    expectNoKeyInAnswer(res);
    const row = await rowById(res.headers.get("x-voxgate-request-id"));
    // nova-3 at $0.0077/min.
    expect(row).toMatchObject({ model_id: "deepgram/nova-3", audio_seconds: 60, cost_usd: "0.0077000000", rated_price_usd: "0.0096250000" });
  });

  it("Deepgram speak: audio unchanged, characters recorded", async () => {
    const res = await fetch(`${app.base}/deepgram/v1/speak?model=aura-2-thalia-en`, {
      method: "POST",
      headers: { authorization: `Token ${OPERATOR_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ text: "x".repeat(100) }),
    });
    expect(sha256(await res.arrayBuffer())).toBe(sha256(deepgram.truth.at(-1)?.audioOut ?? new Uint8Array()));
    const row = await rowById(res.headers.get("x-voxgate-request-id"));
    expect(row).toMatchObject({ model_id: "deepgram/aura-2-thalia-en", characters: 100, cost_usd: "0.0030000000" });
  });

  it("ElevenLabs text-to-speech and /stream: xi-api-key swapped, model_id rewritten, characters priced", async () => {
    for (const suffix of ["", "/stream"]) {
      elevenlabs.reset();
      const res = await fetch(`${app.base}/elevenlabs/v1/text-to-speech/voice123${suffix}?output_format=mp3_44100_128`, {
        method: "POST",
        headers: { "xi-api-key": OPERATOR_KEY, "content-type": "application/json" },
        body: JSON.stringify({ text: "y".repeat(200), model_id: "elevenlabs/eleven_flash_v2_5" }),
      });
      expect(res.status).toBe(200);
      expect(sha256(await res.arrayBuffer())).toBe(sha256(elevenlabs.truth[0]?.audioOut ?? new Uint8Array()));
      const seen = elevenlabs.seen[0];
      expect(seen?.path).toBe(`/v1/text-to-speech/voice123${suffix}`);
      expect(seen?.query.get("output_format")).toBe("mp3_44100_128");
      expect(seen?.headers["xi-api-key"]).toBe(PROVIDER_KEY);
      expect(JSON.parse(Buffer.from(seen?.body ?? []).toString()).model_id).toBe("eleven_flash_v2_5");
      const row = await rowById(res.headers.get("x-voxgate-request-id"));
      // $0.05 per 1k characters.
      expect(row).toMatchObject({ model_id: "elevenlabs/eleven_flash_v2_5", characters: 200, cost_usd: "0.0100000000", rated_price_usd: "0.0125000000" });
    }
    const traversal = await fetch(`${app.base}/elevenlabs/v1/text-to-speech/..%2Fuser/stream`, {
      method: "POST",
      headers: { "xi-api-key": OPERATOR_KEY, "content-type": "application/json" },
      body: JSON.stringify({ text: "hi" }),
    });
    expect(traversal.status).toBe(400);
  });

  it("Cartesia /tts/bytes under /cartesia and at the root (its fixed path), X-API-Key swapped", async () => {
    for (const path of ["/cartesia/tts/bytes", "/tts/bytes"]) {
      cartesia.reset();
      const res = await fetch(`${app.base}${path}`, {
        method: "POST",
        headers: { "x-api-key": OPERATOR_KEY, "cartesia-version": "2025-04-16", "content-type": "application/json", "x-voxgate-project": "tts-root" },
        body: JSON.stringify({ model_id: "sonic-2", transcript: "z".repeat(100), voice: { mode: "id", id: "v" }, output_format: { container: "wav" } }),
      });
      expect(res.status).toBe(200);
      expect(sha256(await res.arrayBuffer())).toBe(sha256(cartesia.truth[0]?.audioOut ?? new Uint8Array()));
      expect(cartesia.seen[0]?.headers["x-api-key"]).toBe(PROVIDER_KEY);
      expect(cartesia.seen[0]?.headers["cartesia-version"]).toBe("2025-04-16");
      const row = await rowById(res.headers.get("x-voxgate-request-id"));
      expect(row).toMatchObject({ model_id: "cartesia/sonic-2", project: "tts-root", characters: 100, cost_usd: "0.0030000000" });
    }
  });

  it("refuses keys that cannot infer and malformed bodies with 4xx, before any vendor", async () => {
    const post = (path: string, headers: Record<string, string>, body: string) =>
      fetch(`${app.base}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
    expect((await post("/elevenlabs/v1/text-to-speech/v/stream", { "xi-api-key": INGEST_KEY }, JSON.stringify({ text: "hi" }))).status).toBe(403);
    expect((await post("/elevenlabs/v1/text-to-speech/v/stream", { "xi-api-key": "wrong-key-0123456789abcdef" }, JSON.stringify({ text: "hi" }))).status).toBe(401);
    expect((await post("/cartesia/tts/bytes", { "x-api-key": OPERATOR_KEY }, "[]")).status).toBe(400);
    expect((await post("/deepgram/v1/speak", { authorization: `Token ${OPERATOR_KEY}` }, "{}")).status).toBe(400);
    expect((await post("/deepgram/v1/listen", { authorization: `Token ${OPERATOR_KEY}` }, JSON.stringify({ nope: 1 }))).status).toBe(400);
    const unknown = await post("/deepgram/v1/speak?model=aura-9", { authorization: `Token ${OPERATOR_KEY}` }, JSON.stringify({ text: "hi" }));
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain("deepgram/aura-2-thalia-en");
    for (const s of stubs) expect(s.seen).toHaveLength(0);
  });

  it("files each tenant's calls under its own tenant", async () => {
    const speak = (key: string) =>
      fetch(`${app.base}/elevenlabs/v1/text-to-speech/v`, {
        method: "POST",
        headers: { "xi-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ text: "tenant", model_id: "eleven_flash_v2_5" }),
      });
    const a = await speak(ACME_KEY);
    const g = await speak(GLOBEX_KEY);
    await a.arrayBuffer();
    await g.arrayBuffer();
    const rows = await recordedRows(app);
    expect(rows.find((r) => r.id === a.headers.get("x-voxgate-request-id"))?.tenant_id).toBe("acme");
    expect(rows.find((r) => r.id === g.headers.get("x-voxgate-request-id"))?.tenant_id).toBe("globex");
    const acmeLogs = (await (await app.call("GET", "/v1/logs?limit=1000", { key: ACME_KEY })).json()) as Array<{ id?: string; request_id?: string }>;
    const ids = JSON.stringify(acmeLogs);
    expect(ids).not.toContain(g.headers.get("x-voxgate-request-id") ?? "missing");
  });
});
