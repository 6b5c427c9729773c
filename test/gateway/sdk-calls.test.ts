import { createAnthropic } from "@ai-sdk/anthropic";
import { DeepgramClient } from "@deepgram/sdk";
import { generateText, streamText } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { pseudoAudio } from "../support/stubs/audio.js";
import { ANTHROPIC_PIECES, anthropicStub } from "../support/stubs/anthropic.js";
import { DeepgramStub, ttsAudioFor } from "../support/stubs/deepgram.js";
import type { StubServer as HttpStub } from "../support/stubs/stub-server.js";
import { presentedKeys } from "../support/stubs/vendor-stub.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

/**
 * Default calls of SDKs the other gateway tests do not make: Vercel `ai` with `@ai-sdk/anthropic`
 * (generateText, streamText) and `@deepgram/sdk` (pre-recorded transcribeFile, speak REST), priced by
 * the shipped catalog alone (aura-2 included).
 */
let anthropic: HttpStub;
const deepgram = new DeepgramStub();

beforeAll(async () => {
  anthropic = await anthropicStub().start();
  await deepgram.start();
});
afterAll(async () => {
  await anthropic?.close();
  await deepgram.stop();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  anthropic: { api_key: "${PROVIDER_KEY}", base_url: "${anthropic.url}/v1" }
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
models:
  llm:
    anthropic/claude-haiku-4-5: { provider: anthropic, model: claude-haiku-4-5 }
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
  tts:
    deepgram/aura-2-thalia-en: { provider: deepgram, model: aura-2-thalia-en }
`,
}));
const lastRow = async () => (await recordedRows(app)).at(-1);

describe("more SDK default calls through Voxgate", () => {
  it("@ai-sdk/anthropic generateText and streamText: the provider key upstream, exact units and price", async () => {
    const from = anthropic.hits.length;
    const claude = createAnthropic({ apiKey: OPERATOR_KEY, baseURL: `${app.base}/anthropic/v1` });
    const g = await generateText({ model: claude("claude-haiku-4-5"), prompt: "hi", maxRetries: 0 });
    expect(g.text).toBe(ANTHROPIC_PIECES.join(""));
    // 9 input + 3 cache reads = 12 input (3 cached), 6 output at claude-haiku-4-5's list prices, × 1.25.
    const exact = { model_id: "anthropic/claude-haiku-4-5", status: "success", input_tokens: 12, cached_input_tokens: 3, output_tokens: 6, cost_usd: "0.0000393000", rated_price_usd: "0.0000491250" };
    expect(await lastRow()).toMatchObject(exact);
    const s = streamText({ model: claude("claude-haiku-4-5"), prompt: "hi", maxRetries: 0 });
    let text = "";
    for await (const piece of s.textStream) text += piece;
    expect(text).toBe(ANTHROPIC_PIECES.join(""));
    expect(await lastRow()).toMatchObject(exact);
    for (const hit of anthropic.hits.slice(from)) {
      expect(hit.headers["x-api-key"]).toBe(PROVIDER_KEY);
      expect(JSON.stringify(hit.headers)).not.toContain(OPERATOR_KEY);
    }
  });

  it("@deepgram/sdk transcribeFile (pre-recorded) and speak generate (REST), aura-2 priced from the catalog", async () => {
    const client = new DeepgramClient({ apiKey: OPERATOR_KEY, environment: { base: `${app.base}/deepgram`, production: "ws://unused", agent: "ws://unused", agentRest: "http://unused" } });
    const audio = Buffer.from(pseudoAudio(16_000 * 2 * 6)); // 6 s of 16 kHz linear16
    const t = await client.listen.v1.media.transcribeFile(audio, { model: "nova-3", encoding: "linear16" });
    expect(JSON.stringify(t)).toContain("stub transcript");
    expect(deepgram.seen.at(-1)?.query.get("model")).toBe("nova-3");
    expect(presentedKeys(deepgram.seen.at(-1) as NonNullable<ReturnType<typeof deepgram.seen.at>>)).toEqual([`Token ${PROVIDER_KEY}`]);
    // nova-3 at $0.0077 a minute: 6 s.
    expect(await lastRow()).toMatchObject({ model_id: "deepgram/nova-3", audio_seconds: 6, cost_usd: "0.0007700000" });

    const text = "Hello from Deepgram"; // 19 characters
    const speech = await client.speak.v1.audio.generate({ text, model: "aura-2-thalia-en" });
    const bytes = Buffer.from(await speech.arrayBuffer());
    expect(bytes.equals(Buffer.from(ttsAudioFor(text)))).toBe(true);
    // aura-2 at $0.030 per 1k characters (the shipped deepgram/aura-2-* entry), × 1.25.
    expect(await lastRow()).toMatchObject({ model_id: "deepgram/aura-2-thalia-en", characters: 19, cost_usd: "0.0005700000", rated_price_usd: "0.0007125000" });
  });
});
