import { describe, expect, it } from "vitest";
import { CartesiaStub, type CartesiaLegScript } from "../../support/stubs/cartesia.js";
import { gatewayApp } from "../support.js";
import { legRows } from "../ws-support.js";
import { expectFailedOver, twoVendors, withCartesiaSocket } from "./tts-support.js";

/**
 * TTS generation failover on Cartesia's tts/websocket, driven by @cartesia/cartesia-js tts.websocket()
 * (wss only: through the TLS terminator) against two scripted Cartesia vendors (primary, then the
 * fallbacks.tts candidate): a generation the primary fails before its first audio is served by the
 * backup without the SDK noticing; one it fails after audio fails in-band and the stream goes on; the
 * next generation goes to the backup.
 */
const primary = new CartesiaStub();
const backup = new CartesiaStub();
const { yaml } = twoVendors("cartesia", "sonic-2", { primary, backup, base: (st) => st.url, clear: (st) => (st.legs = []) });
// The backup's account knows the requested voice by another id.
const YAML = () => yaml("voices:\n  voice-1: { cartesia-b: voice-1-on-b }\n");

const TEXTS = ["the first sentence", "the second one", "and a third"];

/** The session's rows once both legs' rows are recorded. */
const sessionRows = (app: Awaited<ReturnType<typeof gatewayApp>>, session: string) => legRows(app, session, ["cartesia/sonic-2", "cartesia-b/sonic-2"]);

/** Three generations through the SDK in turn: each one's event types, or its error's message. */
function speak(app: Awaited<ReturnType<typeof gatewayApp>>, session: string): Promise<string[]> {
  return withCartesiaSocket(app, session, async (ws) => {
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
    return out;
  });
}

const chars = (s: string) => [...s].length;

describe("Cartesia tts/websocket: generation failover", () => {
  for (const how of ["error", "drop", "close", "stall"] as const) {
    it(`a generation the primary fails before its first audio (${how}) is served by the backup, unseen by the SDK`, async () => {
      const app = await gatewayApp(YAML());
      try {
        primary.legs = [{ how, at: 1 } satisfies CartesiaLegScript];
        const session = `tts-before-${how}`;
        expect(await speak(app, session)).toEqual(["chunk,done", "chunk,done", "chunk,done"]);
        // The backup heard the failed generation again and the one after it; the primary served the first only.
        expect(backup.seen).toHaveLength(1);
        const backupFrames = (backup.seen[0]?.frames ?? []).map((f) => JSON.parse(String(f)) as { transcript: string; voice: { id: string } });
        expect(backupFrames.map((f) => f.transcript)).toEqual([TEXTS[1], TEXTS[2]]);
        // The voices: map names the requested voice as the backup's account knows it; the primary had none for it.
        expect(backupFrames.map((f) => f.voice.id)).toEqual(["voice-1-on-b", "voice-1-on-b"]);
        expect((primary.seen[0]?.frames ?? []).map((f) => (JSON.parse(String(f)) as { voice: { id: string } }).voice.id)).toEqual(["voice-1", "voice-1"]);
        const characters = (i: number) => chars(TEXTS[i] as string);
        await expectFailedOver(app, session, { first: "cartesia/sonic-2", second: "cartesia-b/sonic-2", how, firstCharacters: characters(0), secondCharacters: characters(1) + characters(2), route: /route="\/cartesia\/tts\/websocket"/ });
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
