import { createRequire } from "node:module";
import type CartesiaClient from "@cartesia/cartesia-js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { tlsTerminator } from "../../livekit/support.js";
import { CartesiaStub, type CartesiaLegScript } from "../../support/stubs/cartesia.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, type RequestRowView, recordedRows } from "../support.js";

/**
 * TTS generation failover on Cartesia's tts/websocket, driven by @cartesia/cartesia-js tts.websocket()
 * (wss only: through the TLS terminator) against two scripted Cartesia vendors (primary, then the
 * fallbacks.tts candidate): a generation the primary fails before its first audio is served by the
 * backup without the SDK noticing; one it fails after audio fails in-band and the stream goes on; the
 * next generation goes to the backup.
 */
// The SDK's ESM build looks for `ws` with require(): it is used through its CommonJS entry (as in ws-sdks.test.ts).
const { Cartesia } = createRequire(import.meta.url)("@cartesia/cartesia-js") as { Cartesia: typeof CartesiaClient };
const primary = new CartesiaStub();
const backup = new CartesiaStub();

const YAML = () => `${KEYS_YAML}
providers:
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${primary.url}" }
  cartesia-b: { type: cartesia, api_key: "${PROVIDER_KEY}", base_url: "${backup.url}" }
models:
  tts:
    cartesia/sonic-2: { provider: cartesia, model: sonic-2 }
    cartesia-b/sonic-2: { provider: cartesia-b, model: sonic-2 }
fallbacks:
  tts: [cartesia/sonic-2, cartesia-b/sonic-2]
projects:
  voice: {}
`;

beforeAll(async () => {
  await Promise.all([primary.start(), backup.start()]);
});
afterAll(async () => {
  await Promise.all([primary.stop(), backup.stop()]);
});
beforeEach(() => {
  primary.reset();
  backup.reset();
  primary.legs = [];
  backup.legs = [];
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TEXTS = ["the first sentence", "the second one", "and a third"];

/** The session's rows once both legs' rows are recorded. */
async function sessionRows(app: Awaited<ReturnType<typeof gatewayApp>>, session: string): Promise<RequestRowView[]> {
  for (;;) {
    const rows = (await recordedRows(app)).filter((r) => r.session_id === session);
    if (rows.some((r) => r.model_id === "cartesia/sonic-2") && rows.some((r) => r.model_id === "cartesia-b/sonic-2")) return rows;
    await sleep(20);
  }
}

/** Three generations through the SDK in turn: each one's event types, or its error's message. */
async function speak(app: Awaited<ReturnType<typeof gatewayApp>>, session: string): Promise<string[]> {
  const tls = await tlsTerminator(Number(new URL(app.base).port));
  try {
    const client = new Cartesia({ apiKey: OPERATOR_KEY, baseURL: `https://127.0.0.1:${tls.port}/p/voice/s/${session}/cartesia` });
    const ws = await client.tts.websocket({ ca: tls.ca });
    ws.on("error", () => {});
    const out: string[] = [];
    for (const transcript of TEXTS) {
      const types: string[] = [];
      try {
        for await (const event of ws.generate({
          model_id: "cartesia/sonic-2",
          transcript,
          voice: { mode: "id" as const, id: "voice-1" },
          output_format: { container: "raw" as const, encoding: "pcm_s16le" as const, sample_rate: 24000 as const },
        }))
          types.push(event.type);
        out.push(types.join(","));
      } catch (err) {
        out.push(`error: ${(err as Error).message}`);
      }
    }
    ws.close();
    return out;
  } finally {
    await tls.close();
  }
}

const chars = (s: string) => [...s].length;

describe("Cartesia tts/websocket: generation failover", () => {
  for (const how of ["error", "drop", "close"] as const) {
    it(`a generation the primary fails before its first audio (${how}) is served by the backup, unseen by the SDK`, async () => {
      const app = await gatewayApp(YAML());
      try {
        primary.legs = [{ how, at: 1 } satisfies CartesiaLegScript];
        const session = `tts-before-${how}`;
        expect(await speak(app, session)).toEqual(["chunk,done", "chunk,done", "chunk,done"]);
        // The backup heard the failed generation again and the one after it; the primary served the first only.
        expect(backup.seen).toHaveLength(1);
        const backupTexts = (backup.seen[0]?.frames ?? []).map((f) => (JSON.parse(String(f)) as { transcript: string; model_id: string }).transcript);
        expect(backupTexts).toEqual([TEXTS[1], TEXTS[2]]);
        const rows = await sessionRows(app, session);
        const failed = rows.filter((r) => r.model_id === "cartesia/sonic-2");
        expect(failed).toHaveLength(1);
        expect(failed[0]).toMatchObject({ status: "error", characters: chars(TEXTS[0] as string) });
        expect(failed[0]?.error_message).toMatch(how === "error" ? /scripted vendor failure/ : /lost mid-stream|closed the stream with 1011/);
        const retried = rows.filter((r) => r.model_id === "cartesia-b/sonic-2");
        expect(retried).toHaveLength(1);
        expect(retried[0]).toMatchObject({ status: "fallback", fallback_from: "cartesia/sonic-2", characters: chars(TEXTS[1] as string) + chars(TEXTS[2] as string) });
        expect(retried[0]?.metadata?.stream_id).toBe(failed[0]?.id);
        const metrics = await (await app.call("GET", "/v1/metrics", { key: OPERATOR_KEY })).text();
        expect(metrics).toContain('voxgate_gateway_stream_failovers_total{route="/cartesia/tts/websocket",from="cartesia",to="cartesia-b"} 1');
      } finally {
        await app.close();
      }
    });
  }

  it("a request the vendor refuses (4xx) ends that generation as the vendor said and fails nothing over", async () => {
    const app = await gatewayApp(YAML());
    try {
      primary.legs = [{ how: "refuse", at: 1 }];
      const out = await speak(app, "tts-refused");
      expect(out[0]).toBe("chunk,done");
      // The SDK quotes the vendor's error frame: the vendor's own refusal, not a gateway failure.
      expect(out[1]).toMatch(/"status_code":400.*stub: voice not found/);
      expect(out[2]).toBe("chunk,done");
      expect(backup.seen).toHaveLength(0);
    } finally {
      await app.close();
    }
  });

  it("a generation the primary fails after its first audio fails in-band in Cartesia's shape; the stream goes on, on the backup", async () => {
    const app = await gatewayApp(YAML());
    try {
      primary.legs = [{ how: "drop", at: 1, afterAudio: true }];
      const session = "tts-after-audio";
      const out = await speak(app, session);
      expect(out[0]).toBe("chunk,done");
      expect(out[1]).toMatch(/^error: .*upstream_unavailable|^error: .*vendor failed mid-generation/);
      expect(out[2]).toBe("chunk,done");
      const backupTexts = (backup.seen[0]?.frames ?? []).map((f) => (JSON.parse(String(f)) as { transcript: string }).transcript);
      expect(backupTexts).toEqual([TEXTS[2]]);
      const rows = await sessionRows(app, session);
      // The primary billed what it voiced: both generations it sent audio for.
      expect(rows.find((r) => r.model_id === "cartesia/sonic-2")).toMatchObject({ status: "error", characters: chars(TEXTS[0] as string) + chars(TEXTS[1] as string) });
      expect(rows.find((r) => r.model_id === "cartesia-b/sonic-2")).toMatchObject({ status: "fallback", fallback_from: "cartesia/sonic-2", characters: chars(TEXTS[2] as string) });
    } finally {
      await app.close();
    }
  });
});
