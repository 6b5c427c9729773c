import Cartesia from "@cartesia/cartesia-js";
import { ElevenLabsClient } from "@elevenlabs/elevenlabs-js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { CartesiaStub } from "../support/stubs/cartesia.js";
import { ttsAudioFor } from "../support/stubs/deepgram.js";
import { ElevenLabsStub } from "../support/stubs/elevenlabs.js";
import { presentedKeys, type StubServer } from "../support/stubs/vendor-stub.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

/**
 * The TTS SDKs' own default calls through Voxgate: @elevenlabs/elevenlabs-js (convert, stream,
 * convertWithTimestamps, streamWithTimestamps, no modelId) and @cartesia/cartesia-js (generate,
 * generateSSE), against loopback stub vendors. Prices: catalog list prices × default_markup 1.25.
 */
const elevenlabs = new ElevenLabsStub();
const cartesia = new CartesiaStub();
const stubs: StubServer[] = [elevenlabs, cartesia];
const TEXT = "Hello from Voxgate, 👋é"; // 22 code points

beforeAll(async () => {
  await Promise.all(stubs.map((s) => s.start()));
});
afterAll(async () => {
  await Promise.all(stubs.map((s) => s.stop()));
});
beforeEach(() => {
  for (const s of stubs) s.reset();
});

/** The stub saw the provider's key and never the Voxgate key. */
function expectProviderKeyOnly(stub: StubServer) {
  const req = stub.seen.at(-1);
  expect(req).toBeDefined();
  expect(JSON.stringify({ h: req?.headers, q: req?.query.toString(), b: Buffer.from(req?.body ?? []).toString() })).not.toContain(OPERATOR_KEY);
  expect(presentedKeys(req as NonNullable<typeof req>)).toContain(PROVIDER_KEY);
}

async function streamBytes(s: ReadableStream<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const p of s as unknown as AsyncIterable<Uint8Array>) parts.push(p);
  return Buffer.concat(parts);
}

describe("TTS SDKs through Voxgate", () => {
  const app = useTestApp(() => ({
    listen: true,
    yaml: `${KEYS_YAML}
providers:
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${elevenlabs.url}/v1" }
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${cartesia.url}" }
models:
  tts:
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
    elevenlabs/eleven_multilingual_v2: { provider: elevenlabs, model: eleven_multilingual_v2 }
    cartesia/sonic-2: { provider: cartesia, model: sonic-2 }
`,
  }));
  const lastRow = async () => (await recordedRows(app)).at(-1);
  const el = () => new ElevenLabsClient({ apiKey: OPERATOR_KEY, baseUrl: `${app.base}/elevenlabs`, maxRetries: 0 });
  const ca = () => new Cartesia({ apiKey: OPERATOR_KEY, baseURL: `${app.base}/cartesia`, maxRetries: 0 });
  // 22 characters × $0.05 / 1k (eleven_flash_v2_5), × 1.25.
  const FLASH = { model_id: "elevenlabs/eleven_flash_v2_5", status: "success", characters: 22, cost_usd: "0.0011000000", rated_price_usd: "0.0013750000" };

  it("ElevenLabs convert and stream: audio bytes unchanged, characters of text", async () => {
    const audio = await streamBytes(await el().textToSpeech.convert("voice1", { text: TEXT, modelId: "eleven_flash_v2_5" }));
    expect(audio.equals(Buffer.from(ttsAudioFor(TEXT)))).toBe(true);
    expectProviderKeyOnly(elevenlabs);
    expect(await lastRow()).toMatchObject(FLASH);
    const streamed = await streamBytes(await el().textToSpeech.stream("voice1", { text: TEXT, modelId: "elevenlabs/eleven_flash_v2_5" }));
    expect(streamed.equals(Buffer.from(ttsAudioFor(TEXT)))).toBe(true);
    expect(elevenlabs.seen.at(-1)?.path).toBe("/v1/text-to-speech/voice1/stream");
    expect(await lastRow()).toMatchObject(FLASH);
  });

  it("ElevenLabs convertWithTimestamps and streamWithTimestamps: parsed alignment, metered like their siblings", async () => {
    const res = await el().textToSpeech.convertWithTimestamps("voice1", { text: TEXT, modelId: "eleven_flash_v2_5" });
    expect(Buffer.from(res.audioBase64, "base64").equals(Buffer.from(ttsAudioFor(TEXT)))).toBe(true);
    expect(res.alignment?.characters.length).toBe(22);
    expect(elevenlabs.seen.at(-1)?.path).toBe("/v1/text-to-speech/voice1/with-timestamps");
    expectProviderKeyOnly(elevenlabs);
    expect(await lastRow()).toMatchObject(FLASH);

    const stream = await el().textToSpeech.streamWithTimestamps("voice1", { text: TEXT, modelId: "eleven_flash_v2_5" });
    const pieces: Buffer[] = [];
    for await (const chunk of stream) pieces.push(Buffer.from(chunk.audioBase64 ?? "", "base64"));
    expect(Buffer.concat(pieces).equals(Buffer.from(ttsAudioFor(TEXT)))).toBe(true);
    expect(elevenlabs.seen.at(-1)?.path).toBe("/v1/text-to-speech/voice1/stream/with-timestamps");
    expect(await lastRow()).toMatchObject(FLASH);
  });

  it("ElevenLabs without modelId: ElevenLabs' own default (eleven_multilingual_v2) when configured", async () => {
    await streamBytes(await el().textToSpeech.convert("voice1", { text: TEXT }));
    expect(JSON.parse(Buffer.from(elevenlabs.seen.at(-1)?.body ?? []).toString()).model_id).toBe("eleven_multilingual_v2");
    // 22 × $0.10 / 1k.
    expect(await lastRow()).toMatchObject({ model_id: "elevenlabs/eleven_multilingual_v2", characters: 22, cost_usd: "0.0022000000" });
  });

  it("Cartesia generate (/tts/bytes) and generateSSE (/tts/sse): characters of transcript", async () => {
    const body = {
      model_id: "sonic-2",
      transcript: TEXT,
      voice: { mode: "id" as const, id: "v-1" },
      output_format: { container: "raw" as const, encoding: "pcm_s16le" as const, sample_rate: 24000 as const },
    };
    const res = await ca().tts.generate(body);
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(ttsAudioFor(TEXT)))).toBe(true);
    expectProviderKeyOnly(cartesia);
    expect(await lastRow()).toMatchObject({ model_id: "cartesia/sonic-2", status: "success", characters: 22 });

    const events = await ca().tts.generateSSE(body);
    const audio: Buffer[] = [];
    let done = false;
    for await (const ev of events) {
      if (ev.type === "chunk") audio.push(Buffer.from(ev.data ?? "", "base64"));
      if (ev.type === "done") done = true;
    }
    expect(done).toBe(true);
    expect(Buffer.concat(audio).equals(Buffer.from(ttsAudioFor(TEXT)))).toBe(true);
    expect(cartesia.seen.at(-1)?.path).toBe("/tts/sse");
    expect(JSON.parse(Buffer.from(cartesia.seen.at(-1)?.body ?? []).toString()).model_id).toBe("sonic-2");
    expectProviderKeyOnly(cartesia);
    expect(await lastRow()).toMatchObject({ model_id: "cartesia/sonic-2", status: "success", characters: 22 });
  });
});

describe("ElevenLabs without modelId and without its default model configured", () => {
  const app = useTestApp(() => ({
    listen: true,
    yaml: `${KEYS_YAML}
providers:
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${elevenlabs.url}/v1" }
models:
  tts:
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
stacks:
  voice: { tts: elevenlabs/eleven_flash_v2_5 }
projects:
  support: { default_stack: voice }
`,
  }));

  it("goes to the project's stack; with no stack, 404 model_not_found that the SDK reports readably", async () => {
    const client = (project?: string) =>
      new ElevenLabsClient({ apiKey: OPERATOR_KEY, baseUrl: `${app.base}${project ? `/p/${project}/s/s-1` : ""}/elevenlabs`, maxRetries: 0 });
    await streamBytes(await client("support").textToSpeech.convert("voice1", { text: TEXT }));
    expect(JSON.parse(Buffer.from(elevenlabs.seen.at(-1)?.body ?? []).toString()).model_id).toBe("eleven_flash_v2_5");
    expect((await recordedRows(app)).at(-1)).toMatchObject({ model_id: "elevenlabs/eleven_flash_v2_5", project: "support", characters: 22 });
    const err = (await client()
      .textToSpeech.convert("voice1", { text: TEXT })
      .catch((e: unknown) => e)) as Error & { statusCode?: number };
    expect(err.statusCode).toBe(404);
    expect(err.message).toContain("no model named and the project has no default_stack");
  });
});
