import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import Anthropic from "@anthropic-ai/sdk";
import Cartesia from "@cartesia/cartesia-js";
import { DeepgramClient, DeepgramError } from "@deepgram/sdk";
import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";
import { ChatOpenAI } from "@langchain/openai";
import { APICallError, generateText } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { StubServer } from "../support/stubs/stub-server.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY } from "./support.js";

/**
 * Voxgate's own refusals (404 model_not_found, 402 budget_exceeded, 401) in each vendor's error shape,
 * as each official SDK parses them: its own error class, the status, and Voxgate's message readable in
 * the error's text (not a raw JSON dump in place of the message where the SDK reads one). No vendor is
 * reached: the stub counts that.
 */
const stub = new StubServer((_req, res) => void res.writeHead(500).end());
beforeAll(async () => {
  await stub.start();
});
afterAll(async () => {
  await stub.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
  anthropic: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
    anthropic/claude-haiku-4-5: { provider: anthropic, model: claude-haiku-4-5 }
  tts:
    deepgram/aura-2-thalia-en: { provider: deepgram, model: aura-2-thalia-en }
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
    cartesia/sonic-2: { provider: cartesia, model: sonic-2 }
projects:
  broke: { daily_budget: 0, budget_action: block }
`,
}));

const NOT_FOUND = "model nope-model is not routable here";
const SPENT = "project broke has reached its daily budget";
/** The base URL of a prefix, optionally behind the attribution prefix of the spent project. */
const at = (prefix: string, broke = false) => `${app.base}${broke ? "/p/broke/s/s-1" : ""}${prefix}`;

async function failure(p: Promise<unknown>): Promise<Error & { status?: number; statusCode?: number }> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(Error);
  return e as Error & { status?: number; statusCode?: number };
}

describe("each SDK's error class carries Voxgate's refusal readably", () => {
  it("openai: NotFoundError / APIError with the message and code", async () => {
    const client = (broke = false) => new OpenAI({ apiKey: OPERATOR_KEY, baseURL: at("/openai/v1", broke), maxRetries: 0 });
    const nf = await failure(client().chat.completions.create({ model: "nope-model", messages: [{ role: "user", content: "hi" }] }));
    expect(nf).toBeInstanceOf(OpenAI.NotFoundError);
    expect(nf.message).toBe(`404 ${NOT_FOUND}; routable models: openai/gpt-4.1-mini`);
    const spent = await failure(client(true).responses.create({ model: "gpt-4.1-mini", input: "hi" }));
    expect(spent).toBeInstanceOf(OpenAI.APIError);
    expect(spent.status).toBe(402);
    expect(spent.message).toBe(`402 ${SPENT}`);
    expect((spent as InstanceType<typeof OpenAI.APIError>).code).toBe("budget_exceeded");
    const unauthorized = await failure(new OpenAI({ apiKey: "vk_wrong", baseURL: at("/openai/v1"), maxRetries: 0 }).models.list());
    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("@anthropic-ai/sdk: NotFoundError / APIError with the message", async () => {
    const client = (broke = false) => new Anthropic({ apiKey: OPERATOR_KEY, baseURL: at("/anthropic", broke), maxRetries: 0 });
    const body = { max_tokens: 10, messages: [{ role: "user" as const, content: "hi" }] };
    const nf = await failure(client().messages.create({ ...body, model: "nope-model" }));
    expect(nf).toBeInstanceOf(Anthropic.NotFoundError);
    expect(nf.message).toContain(NOT_FOUND);
    const spent = await failure(client(true).messages.create({ ...body, model: "claude-haiku-4-5" }));
    expect(spent).toBeInstanceOf(Anthropic.APIError);
    expect(spent.status).toBe(402);
    expect(spent.message).toContain(SPENT);
  });

  it("Vercel AI SDK (@ai-sdk/openai, @ai-sdk/anthropic): APICallError with the vendor's message", async () => {
    const openai = (broke = false) => createOpenAI({ apiKey: OPERATOR_KEY, baseURL: at("/openai/v1", broke) });
    const nf = await failure(generateText({ model: openai()("nope-model"), prompt: "hi", maxRetries: 0 }));
    expect(APICallError.isInstance(nf)).toBe(true);
    expect((nf as APICallError).statusCode).toBe(404);
    expect(nf.message).toContain(NOT_FOUND);
    const spent = await failure(generateText({ model: openai(true)("gpt-4.1-mini"), prompt: "hi", maxRetries: 0 }));
    expect((spent as APICallError).statusCode).toBe(402);
    expect(spent.message).toBe(SPENT);

    const anthropic = (broke = false) => createAnthropic({ apiKey: OPERATOR_KEY, baseURL: at("/anthropic/v1", broke) });
    const anf = await failure(generateText({ model: anthropic()("nope-model"), prompt: "hi", maxRetries: 0 }));
    expect((anf as APICallError).statusCode).toBe(404);
    expect(anf.message).toContain(NOT_FOUND);
    const aspent = await failure(generateText({ model: anthropic(true)("claude-haiku-4-5"), prompt: "hi", maxRetries: 0 }));
    expect((aspent as APICallError).statusCode).toBe(402);
    expect(aspent.message).toBe(SPENT);
  });

  it("@langchain/openai: the OpenAI error, with and without useResponsesApi", async () => {
    for (const useResponsesApi of [false, true]) {
      const chat = (model: string, broke = false) =>
        new ChatOpenAI({ model, apiKey: OPERATOR_KEY, configuration: { baseURL: at("/openai/v1", broke) }, maxRetries: 0, useResponsesApi });
      const nf = await failure(chat("nope-model").invoke("hi"));
      expect(nf.message).toContain(NOT_FOUND);
      expect(nf.status).toBe(404);
      const spent = await failure(chat("gpt-4.1-mini", true).invoke("hi"));
      expect(spent.message).toContain(SPENT);
      expect(spent.status).toBe(402);
    }
  });

  it("@deepgram/sdk: DeepgramError with the status and err_msg", async () => {
    const client = (broke = false) =>
      new DeepgramClient({ apiKey: OPERATOR_KEY, environment: { base: at("/deepgram", broke), production: "ws://unused", agent: "ws://unused", agentRest: "http://unused" } });
    const nf = await failure(client().speak.v1.audio.generate({ text: "hi", model: "nope-model" as "aura-2-thalia-en" }));
    expect(nf).toBeInstanceOf(DeepgramError);
    expect(nf.statusCode).toBe(404);
    expect(nf.message).toContain(NOT_FOUND);
    const spent = await failure(client(true).speak.v1.audio.generate({ text: "hi", model: "aura-2-thalia-en" }));
    expect(spent).toBeInstanceOf(DeepgramError);
    expect(spent.statusCode).toBe(402);
    expect(spent.message).toContain(SPENT);
  });

  it("@elevenlabs/elevenlabs-js: ElevenLabsError with the status and detail.message", async () => {
    const client = (broke = false) => new ElevenLabsClient({ apiKey: OPERATOR_KEY, baseUrl: at("/elevenlabs", broke), maxRetries: 0 });
    const nf = await failure(client().textToSpeech.convert("voice1", { text: "hi", modelId: "nope-model" }));
    expect(nf).toBeInstanceOf(ElevenLabsError);
    expect(nf.statusCode).toBe(404);
    expect(nf.message).toContain(NOT_FOUND);
    const spent = await failure(client(true).textToSpeech.convert("voice1", { text: "hi", modelId: "eleven_flash_v2_5" }));
    expect(spent).toBeInstanceOf(ElevenLabsError);
    expect(spent.statusCode).toBe(402);
    expect(spent.message).toContain(SPENT);
  });

  it("@cartesia/cartesia-js: NotFoundError / APIError whose message is Cartesia's `message`, not raw JSON", async () => {
    const client = (broke = false) => new Cartesia({ apiKey: OPERATOR_KEY, baseURL: at("/cartesia", broke), maxRetries: 0 });
    const body = {
      transcript: "hi",
      voice: { mode: "id" as const, id: "v-1" },
      output_format: { container: "raw" as const, encoding: "pcm_s16le" as const, sample_rate: 24000 as const },
    };
    const nf = await failure(client().tts.generate({ ...body, model_id: "nope-model" }));
    expect(nf).toBeInstanceOf(Cartesia.NotFoundError);
    expect(nf.message).toBe(`404 ${NOT_FOUND}; routable models: cartesia/sonic-2`);
    expect((nf as InstanceType<typeof Cartesia.APIError>).error).toMatchObject({ error_code: "model_not_found", title: "Not Found" });
    const spent = await failure(client(true).tts.generateSSE({ ...body, model_id: "sonic-2" }));
    expect(spent).toBeInstanceOf(Cartesia.APIError);
    expect(spent.status).toBe(402);
    expect(spent.message).toBe(`402 ${SPENT}`);
  });

  it("no vendor was reached by any refused call", () => {
    expect(stub.hits).toHaveLength(0);
  });
});
