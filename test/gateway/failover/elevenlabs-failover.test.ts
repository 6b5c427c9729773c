import { describe, expect, it } from "vitest";
import { ElevenLabsStub } from "../../support/stubs/elevenlabs.js";
import { gatewayApp, OPERATOR_KEY } from "../support.js";
import { legRows, type OpenSocket, opened, openWs } from "../ws-support.js";
import { expectFailedOver, twoVendors } from "./tts-support.js";

/**
 * TTS generation failover on ElevenLabs' multi-stream-input WebSocket against two scripted ElevenLabs
 * vendors (primary, then the fallbacks.tts candidate). @elevenlabs/elevenlabs-js 2.73 has no client
 * for this socket (only its message types), so a raw `ws` client speaks the documented protocol the
 * way LiveKit's ElevenLabs plugin does: a context per generation, its opener, text, flush; it waits
 * for the context's `isFinal` (or an error naming it).
 */
const primary = new ElevenLabsStub();
const backup = new ElevenLabsStub();
const { first: MODEL, second: BACKUP_MODEL, yaml } = twoVendors("elevenlabs", "eleven_flash_v2_5", { primary, backup, base: (st) => `${st.url}/v1`, clear: (st) => (st.legs = []) });
// The voice the client names is another id on each account.
const YAML = () => yaml("voices:\n  narrator: { elevenlabs: voice-a, elevenlabs-b: voice-b }\n");

const TEXTS = ["the first sentence", "the second one", "and a third"];
const chars = (s: string) => [...s].length;

type Message = { audio?: string | null; isFinal?: boolean; contextId?: string; error?: string; message?: string };

/** One generation on context `ctx`: "audio,final", or "audio,error: …" / "error: …" when it failed. */
async function generate(s: OpenSocket, ctx: string, text: string, first: boolean): Promise<string> {
  const from = s.received.length;
  s.ws.send(JSON.stringify({ text: " ", context_id: ctx, ...(first && { voice_settings: { stability: 0.5, similarity_boost: 0.8 } }) }));
  s.ws.send(JSON.stringify({ text, context_id: ctx }));
  s.ws.send(JSON.stringify({ context_id: ctx, flush: true }));
  for (;;) {
    const mine = s.received.slice(from).map((m) => JSON.parse(String(m)) as Message).filter((m) => m.contextId === ctx || (m.error && !m.contextId));
    const end = mine.find((m) => m.isFinal === true || m.error);
    if (end) {
      const audio = mine.some((m) => typeof m.audio === "string" && m.audio !== "") ? "audio," : "";
      return end.error ? `${audio}error: ${end.error} ${end.message}` : `${audio}final`;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function speak(app: Awaited<ReturnType<typeof gatewayApp>>, session: string): Promise<{ out: string[]; s: OpenSocket }> {
  const url = `${app.base.replace("http://", "ws://")}/p/voice/s/${session}/elevenlabs/v1/text-to-speech/narrator/multi-stream-input?model_id=${MODEL}&output_format=pcm_24000`;
  const s = opened(await openWs(url, { headers: { "xi-api-key": OPERATOR_KEY } }));
  const out: string[] = [];
  for (const [i, text] of TEXTS.entries()) out.push(await generate(s, `c${i}`, text, i === 0));
  return { out, s };
}

const texts = (frames: Array<string | Uint8Array>) => frames.map((f) => (JSON.parse(String(f)) as { text?: string }).text).filter((t) => t !== undefined);

describe("ElevenLabs multi-stream-input: generation failover", () => {
  for (const how of ["error", "drop", "close", "stall"] as const) {
    it(`a generation the primary fails before its first audio (${how}) is served by the backup, unseen by the client`, async () => {
      const app = await gatewayApp(YAML());
      try {
        primary.legs = [{ how, at: 1 }];
        const session = `el-before-${how}`;
        const { out, s } = await speak(app, session);
        expect(out).toEqual(["audio,final", "audio,final", "audio,final"]);
        s.ws.close();
        // Each vendor was asked for the voice as the voices: map names it there.
        expect(primary.seen[0]?.path).toBe("/v1/text-to-speech/voice-a/multi-stream-input");
        expect(backup.seen[0]?.path).toBe("/v1/text-to-speech/voice-b/multi-stream-input");
        // The backup got the stream's opener, then the failed generation again, then the next one.
        expect(backup.seen).toHaveLength(1);
        expect(texts(backup.seen[0]?.frames ?? [])).toEqual([" ", " ", TEXTS[1], " ", TEXTS[2]]);
        await expectFailedOver(app, session, { first: MODEL, second: BACKUP_MODEL, how, firstCharacters: chars(TEXTS[0] as string), secondCharacters: chars(TEXTS[1] as string) + chars(TEXTS[2] as string), route: /multi-stream-input/ });
      } finally {
        await app.close();
      }
    });
  }

  it("a generation the primary fails after its first audio fails in-band in ElevenLabs' shape; the stream goes on, on the backup", async () => {
    const app = await gatewayApp(YAML());
    try {
      primary.legs = [{ how: "error", at: 1, afterAudio: true }];
      const session = "el-after-audio";
      const { out, s } = await speak(app, session);
      expect(out[0]).toBe("audio,final");
      expect(out[1]).toMatch(/^audio,error: upstream_unavailable the vendor failed mid-generation: stub: scripted vendor failure/);
      expect(out[2]).toBe("audio,final");
      s.ws.close();
      expect(texts(backup.seen[0]?.frames ?? [])).toEqual([" ", " ", TEXTS[2]]);
      const rows = await legRows(app, session, [MODEL, BACKUP_MODEL]);
      // The primary billed what it voiced: both generations it sent audio for.
      expect(rows.find((r) => r.model_id === MODEL)).toMatchObject({ status: "error", characters: chars(TEXTS[0] as string) + chars(TEXTS[1] as string) });
      expect(rows.find((r) => r.model_id === BACKUP_MODEL)).toMatchObject({ status: "fallback", fallback_from: MODEL, characters: chars(TEXTS[2] as string) });
    } finally {
      await app.close();
    }
  });

  it("an error refusing the client's input passes as the vendor sent it (and its close), and fails nothing over", async () => {
    const app = await gatewayApp(YAML());
    try {
      primary.legs = [{ how: "refuse", at: 0 }];
      const url = `${app.base.replace("http://", "ws://")}/p/voice/s/el-refused/elevenlabs/v1/text-to-speech/narrator/multi-stream-input?model_id=${MODEL}`;
      const s = opened(await openWs(url, { headers: { "xi-api-key": OPERATOR_KEY } }));
      expect(await generate(s, "c0", "refused", true)).toBe("error: invalid_input_message stub: invalid input");
      expect((await s.closed).code).toBe(1008);
      expect(backup.seen).toHaveLength(0);
    } finally {
      await app.close();
    }
  });
});

/**
 * stream-input: one unnamed context for the whole connection, so only a failure before the stream's
 * first audio is retried unseen; after it, the vendor's failure is the client's in-band error and the
 * rest of the stream goes on, on the backup (sent the opener first).
 */
describe("ElevenLabs stream-input: failover", () => {
  /** Each text flushed in turn (the next once its audio came), then the end of stream: what the client got, in order. */
  async function streamInput(app: Awaited<ReturnType<typeof gatewayApp>>, session: string): Promise<string[]> {
    const url = `${app.base.replace("http://", "ws://")}/p/voice/s/${session}/elevenlabs/v1/text-to-speech/narrator/stream-input?model_id=${MODEL}`;
    const s = opened(await openWs(url, { headers: { "xi-api-key": OPERATOR_KEY } }));
    const got = () => s.received.map((r) => JSON.parse(String(r)) as Message).map((m) => (m.error ? `error: ${m.error} ${m.message}` : m.isFinal ? "final" : m.audio ? "audio" : "other"));
    s.ws.send(JSON.stringify({ text: " ", voice_settings: { stability: 0.5, similarity_boost: 0.8 } }));
    for (const text of TEXTS) {
      const audio = got().filter((k) => k === "audio").length;
      s.ws.send(JSON.stringify({ text, flush: true }));
      while (got().filter((k) => k === "audio").length === audio) await new Promise((r) => setTimeout(r, 5));
    }
    s.ws.send(JSON.stringify({ text: "" }));
    expect((await s.closed).code).toBe(1000);
    return got();
  }

  it("a failure before the stream's first audio is retried on the backup, unseen by the client", async () => {
    const app = await gatewayApp(YAML());
    try {
      primary.legs = [{ how: "error", at: 0 }];
      const session = "el-input-before";
      expect(await streamInput(app, session)).toEqual(["audio", "audio", "audio", "final"]);
      expect(backup.seen[0]?.path).toBe("/v1/text-to-speech/voice-b/stream-input");
      expect(texts(backup.seen[0]?.frames ?? [])).toEqual([" ", TEXTS[0], TEXTS[1], TEXTS[2], ""]);
      const all = TEXTS.reduce((a, t) => a + chars(t), 0);
      await expectFailedOver(app, session, { first: MODEL, second: BACKUP_MODEL, how: "error", firstCharacters: 0, secondCharacters: all, route: /stream-input/ });
    } finally {
      await app.close();
    }
  });

  it("a failure after its first audio is an in-band error; the next texts go to the backup after the opener", async () => {
    const app = await gatewayApp(YAML());
    try {
      primary.legs = [{ how: "drop", at: 1, afterAudio: true }];
      const session = "el-input-after";
      // The failed text's own audio, then the error in ElevenLabs' shape; the next text voiced by the backup.
      expect(await streamInput(app, session)).toEqual(["audio", "audio", "error: upstream_unavailable the vendor failed mid-generation: upstream connection lost mid-stream", "audio", "final"]);
      expect(texts(backup.seen[0]?.frames ?? [])).toEqual([" ", TEXTS[2], ""]);
      const rows = await legRows(app, session, [MODEL, BACKUP_MODEL]);
      expect(rows.find((r) => r.model_id === MODEL)).toMatchObject({ status: "error", characters: chars(TEXTS[0] as string) + chars(TEXTS[1] as string) });
      expect(rows.find((r) => r.model_id === BACKUP_MODEL)).toMatchObject({ status: "fallback", fallback_from: MODEL, characters: chars(TEXTS[2] as string) });
    } finally {
      await app.close();
    }
  });
});
