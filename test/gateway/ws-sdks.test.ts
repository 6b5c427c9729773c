import { createRequire } from "node:module";
import { createOpenAI } from "@ai-sdk/openai";
import type CartesiaClient from "@cartesia/cartesia-js";
import { DeepgramClient } from "@deepgram/sdk";
import { experimental_streamTranscribe as streamTranscribe } from "ai";
import { WebSocket } from "ws";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestApp } from "../support/app.js";
import { pseudoAudio } from "../support/stubs/audio.js";
import { CartesiaStub } from "../support/stubs/cartesia.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { OpenAIAudioStub } from "../support/stubs/openai-audio.js";
import { presentedKeys, type StubServer } from "../support/stubs/vendor-stub.js";
import { tlsTerminator } from "../livekit/support.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

/**
 * The governed streams through the official SDKs' own WebSocket clients: Cartesia's tts.websocket()
 * (wss only: through a TLS terminator with a certificate made for the run) and the AI SDK's
 * experimental_streamTranscribe, both with no model on the URL and no default_stack; @deepgram/sdk 5's
 * live and speak clients, and its live client meeting a revoked key (1008, then its redials refused at
 * the upgrade).
 */
// The SDK's ESM build looks for `ws` with require(), which ESM lacks, and Node 20 has no global
// WebSocket: in Node it is used through its CommonJS entry, as a CommonJS app would load it.
const { Cartesia } = createRequire(import.meta.url)("@cartesia/cartesia-js") as { Cartesia: typeof CartesiaClient };
const cartesia = new CartesiaStub();
const openai = new OpenAIAudioStub();
const deepgram = new DeepgramStub();
const stubs: StubServer[] = [cartesia, openai, deepgram];

const YAML = () => `${KEYS_YAML}
providers:
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${cartesia.url}" }
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${openai.url}/v1" }
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
models:
  stt:
    openai/gpt-realtime-whisper: { provider: openai, model: gpt-realtime-whisper }
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
  tts:
    cartesia/sonic-2: { provider: cartesia, model: sonic-2 }
    deepgram/aura-2-thalia-en: { provider: deepgram, model: aura-2-thalia-en }
projects:
  bare: {}
pricing:
  catalog:
    cartesia/sonic-2: { price_usd: 0.03 }
`;

beforeAll(async () => {
  await Promise.all(stubs.map((s) => s.start()));
});
afterAll(async () => {
  await Promise.all(stubs.map((s) => s.stop()));
});
beforeEach(() => {
  for (const s of stubs) s.reset();
});

describe("official SDK WebSocket clients", () => {
  it("@cartesia/cartesia-js tts.websocket(): model per generation, an unknown model answered with Cartesia's error", async () => {
    const app = await gatewayApp(YAML());
    const tls = await tlsTerminator(Number(new URL(app.base).port));
    try {
      const client = new Cartesia({ apiKey: OPERATOR_KEY, baseURL: `https://127.0.0.1:${tls.port}/p/bare/s/call-sdk/cartesia` });
      const ws = await client.tts.websocket({ ca: tls.ca });
      const errors: Error[] = [];
      ws.on("error", (e: Error) => errors.push(e));
      const request = (model: string, transcript: string) => ({
        model_id: model,
        transcript,
        voice: { mode: "id" as const, id: "voice-1" },
        output_format: { container: "raw" as const, encoding: "pcm_s16le" as const, sample_rate: 24000 as const },
      });
      const types: string[] = [];
      for await (const event of ws.generate(request("cartesia/sonic-2", "hello from the sdk"))) types.push(event.type);
      expect(types).toEqual(["chunk", "done"]);
      const failed = (async () => {
        for await (const _ of ws.generate(request("cartesia/no-such-model", "never sent"))) {
          // the gateway's in-band error ends the generation
        }
      })();
      await expect(failed).rejects.toThrow(/model_not_found/);
      expect(errors.map((e) => e.message).join(" ")).toContain("cartesia/no-such-model");
      // The vendor's own error for a generation reaches the SDK unchanged, and that generation bills 0.
      const vendorFailed = (async () => {
        for await (const _ of ws.generate(request("sonic-2", "this will FAIL"))) {
          // the vendor's error ends the generation
        }
      })();
      await expect(vendorFailed).rejects.toThrow(/stub generation failed/);
      ws.close();
      expect(cartesia.seen).toHaveLength(1);
      expect((cartesia.seen[0]?.frames ?? []).map((f) => (JSON.parse(String(f)) as { model_id: string }).model_id)).toEqual(["sonic-2", "sonic-2"]);
      const rows = (await recordedRows(app)).filter((r) => r.project === "bare");
      let stream = rows.find((r) => r.model_id === "cartesia/sonic-2" && r.status === "success");
      while (!stream) {
        await new Promise((r) => setTimeout(r, 20));
        stream = (await recordedRows(app)).find((r) => r.model_id === "cartesia/sonic-2" && r.status === "success");
      }
      expect(stream).toMatchObject({ characters: 18, session_id: "call-sdk" });
      const failedRow = (await recordedRows(app)).find((r) => r.model_id === "cartesia/sonic-2" && r.status === "error");
      expect(failedRow).toMatchObject({ characters: 0, error_message: "stub generation failed", session_id: "call-sdk" });
    } finally {
      await tls.close();
      await app.close();
    }
  });

  it("the AI SDK's experimental_streamTranscribe: the model from session.update, no default_stack", async () => {
    const app = await gatewayApp(YAML());
    try {
      const openaiProvider = createOpenAI({
        apiKey: OPERATOR_KEY,
        baseURL: `${app.base}/p/bare/s/call-ai/openai/v1`,
        // Node 20 has no global WebSocket: the provider takes the `ws` constructor (Node 22 needs none).
        webSocket: WebSocket as unknown as NonNullable<Parameters<typeof createOpenAI>[0]>["webSocket"],
      });
      const second = pseudoAudio(48_000); // 1 s of 24 kHz pcm16
      const audio = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(second);
          controller.close();
        },
      });
      const result = streamTranscribe({ model: openaiProvider.transcription("gpt-realtime-whisper"), audio, inputAudioFormat: { type: "audio/pcm", rate: 24000 } });
      const parts: string[] = [];
      for await (const part of result.fullStream) parts.push(part.type);
      expect(parts).toContain("transcript-final");
      expect(openai.seen[0]?.query.get("intent")).toBe("transcription");
      let row = (await recordedRows(app)).find((r) => r.session_id === "call-ai");
      while (!row) {
        await new Promise((r) => setTimeout(r, 20));
        row = (await recordedRows(app)).find((r) => r.session_id === "call-ai");
      }
      expect(row).toMatchObject({ model_id: "openai/gpt-realtime-whisper", project: "bare", audio_seconds: 1, status: "success" });
    } finally {
      await app.close();
    }
  });

  it("@deepgram/sdk live and speak (WebSocket): provider key only upstream, units and the catalog's cost recorded", async () => {
    const app = await gatewayApp(YAML());
    const sdk = (session: string) => new DeepgramClient({ apiKey: OPERATOR_KEY, baseUrl: `${app.base.replace("http://", "ws://")}/p/bare/s/${session}/deepgram` });
    const closed = (socket: { on(e: "close", cb: () => void): void }) => new Promise<void>((r) => socket.on("close", () => r()));
    const row = async (session: string) => {
      for (;;) {
        const found = (await recordedRows(app)).find((r) => r.session_id === session && r.metadata?.checkpoint === undefined);
        if (found) return found;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      const live = await sdk("dg-live").listen.v1.connect({ model: "nova-3", encoding: "linear16", sample_rate: 16000 });
      const types: string[] = [];
      live.on("message", (m: { type?: string }) => void types.push(String(m.type)));
      const liveClosed = closed(live);
      live.connect();
      await live.waitForOpen();
      live.sendMedia(pseudoAudio(32_000)); // 1 s of 16 kHz linear16
      live.sendCloseStream({ type: "CloseStream" });
      await liveClosed;
      live.close();
      expect(types).toContain("Results");
      // nova-3 at $0.0077 a minute (the shipped catalog): 1 s.
      expect(await row("dg-live")).toMatchObject({ model_id: "deepgram/nova-3", audio_seconds: 1, status: "success", cost_usd: "0.0001283333" });

      const speak = await sdk("dg-speak").speak.v1.connect({ model: "aura-2-thalia-en", encoding: "linear16" });
      const audio: Blob[] = [];
      let flushed = false;
      speak.on("message", (m: unknown) => {
        if (m instanceof Blob) audio.push(m);
        else if ((m as { type?: string }).type === "Flushed") flushed = true;
      });
      const speakClosed = closed(speak);
      speak.connect();
      await speak.waitForOpen();
      const text = "Hello from Deepgram"; // 19 characters
      speak.sendText({ type: "Speak", text });
      speak.sendFlush({ type: "Flush" });
      while (!flushed) await new Promise((r) => setTimeout(r, 10));
      speak.sendClose({ type: "Close" });
      await speakClosed;
      speak.close();
      const bytes = Buffer.concat(await Promise.all(audio.map(async (b) => Buffer.from(await b.arrayBuffer()))));
      const { ttsAudioFor } = await import("../support/stubs/deepgram.js");
      expect(bytes.equals(Buffer.from(ttsAudioFor(text)))).toBe(true);
      // aura-2 at $0.030 per 1k characters (the shipped deepgram/aura-2-* entry).
      expect(await row("dg-speak")).toMatchObject({ model_id: "deepgram/aura-2-thalia-en", characters: 19, status: "success", cost_usd: "0.0005700000" });

      expect(deepgram.seen.map((r) => r.path)).toEqual(["/v1/listen", "/v1/speak"]);
      for (const seen of deepgram.seen) {
        expect(presentedKeys(seen)).toEqual([`Token ${PROVIDER_KEY}`]);
        expect(JSON.stringify({ h: seen.headers, q: seen.query.toString() })).not.toContain(OPERATOR_KEY);
      }
    } finally {
      await app.close();
    }
  });

  it("@deepgram/sdk live: a revoked vk_ key's stream is closed 1008 `key revoked`; the SDK's redials meet 401 and reach no vendor", async () => {
    const a = await gatewayApp(YAML());
    const b = await createTestApp({ yaml: YAML(), replicaOf: a });
    const bBase = await b.listen();
    try {
      const minted = (await (await a.call("POST", "/v1/api-keys", { key: OPERATOR_KEY, body: { name: "sdk-agent", tenant_id: "acme", scopes: ["infer"] } })).json()) as { plaintext: string; id: string };
      const dg = new DeepgramClient({ apiKey: minted.plaintext, baseUrl: `${bBase.replace("http://", "ws://")}/p/bare/s/call-dg/deepgram` });
      const socket = await dg.listen.v1.connect({ model: "nova-3", encoding: "linear16", sample_rate: 16000 });
      const closes: Array<{ code: number; reason: string }> = [];
      let results = 0;
      socket.on("message", (m: { type?: string }) => {
        if (m.type === "Results") results++;
      });
      socket.on("close", (e: { code: number; reason: string }) => closes.push({ code: e.code, reason: e.reason }));
      socket.connect();
      await socket.waitForOpen();
      socket.sendMedia(pseudoAudio(16_000));
      while (results === 0) await new Promise((r) => setTimeout(r, 10));

      expect((await a.call("DELETE", `/v1/api-keys/${minted.id}`, { key: OPERATOR_KEY })).status).toBe(204);
      while (closes.length === 0) await new Promise((r) => setTimeout(r, 20));
      expect(closes[0]).toEqual({ code: 1008, reason: "key revoked" });
      // The SDK re-dials on any close but 1000: its next handshake is refused (counted), no vendor is reached.
      const refusals = async () => Number(/voxgate_auth_failures_total\{credential="virtual"\} (\d+)/.exec(await (await b.call("GET", "/v1/metrics", { key: OPERATOR_KEY })).text())?.[1] ?? 0);
      while ((await refusals()) === 0) await new Promise((r) => setTimeout(r, 100));
      socket.close();
      expect(deepgram.seen).toHaveLength(1);
      const finalRow = async () => (await recordedRows(b)).find((r) => r.session_id === "call-dg" && r.metadata?.checkpoint === undefined);
      let final = await finalRow();
      while (!final) {
        await new Promise((r) => setTimeout(r, 20));
        final = await finalRow();
      }
      expect(final).toMatchObject({ tenant_id: "acme", audio_seconds: 0.5 });
      expect(final.metadata).toMatchObject({ ended_by: "key revoked" });
    } finally {
      await b.close();
      await a.close();
    }
  });
});
