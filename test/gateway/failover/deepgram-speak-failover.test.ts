import { DeepgramClient } from "@deepgram/sdk";
import { describe, expect, it } from "vitest";
import { DeepgramStub, ttsAudioFor } from "../../support/stubs/deepgram.js";
import { gatewayApp, OPERATOR_KEY } from "../support.js";
import { legRows } from "../ws-support.js";
import { expectFailedOver, twoVendors } from "./tts-support.js";

/**
 * TTS generation failover on Deepgram's speak WebSocket, driven by @deepgram/sdk speak.v1.connect()
 * against two scripted Deepgram vendors (primary, then the fallbacks.tts candidate). A generation is
 * the text up to a Flush: one the primary fails before its audio is voiced by the backup (the SDK
 * sees its whole audio once, then `Flushed`); one failed after audio ends with Deepgram's `Error`
 * message and the stream goes on, on the backup.
 */
const primary = new DeepgramStub();
const backup = new DeepgramStub();
const { first: MODEL, second: BACKUP_MODEL, yaml: YAML } = twoVendors("deepgram", "aura-2-thalia-en", { primary, backup, base: (st) => `${st.url}/v1`, clear: (st) => (st.speakLegs = []) });

const TEXTS = ["the first sentence", "the second one", "and a third"];
const chars = (s: string) => [...s].length;

interface Generation {
  audio: Buffer;
  end: string;
}

/** Three generations through the SDK in turn: each one's audio and how it ended (Flushed, or the Error's description). */
async function speak(app: Awaited<ReturnType<typeof gatewayApp>>, session: string): Promise<Generation[]> {
  const client = new DeepgramClient({ apiKey: OPERATOR_KEY, baseUrl: `${app.base.replace("http://", "ws://")}/p/voice/s/${session}/deepgram` });
  const socket = await client.speak.v1.connect({ model: "aura-2-thalia-en", encoding: "linear16", reconnectAttempts: 0 });
  let current: { blobs: Blob[]; end: string | null } = { blobs: [], end: null };
  socket.on("message", (m: unknown) => {
    if (m instanceof Blob) current.blobs.push(m);
    else {
      const msg = m as { type?: string; description?: string };
      if (msg.type === "Flushed") current.end = "Flushed";
      if (msg.type === "Error") current.end = `Error: ${msg.description}`;
    }
  });
  const closed = new Promise<void>((r) => socket.on("close", () => r()));
  socket.connect();
  await socket.waitForOpen();
  const out: Generation[] = [];
  for (const text of TEXTS) {
    current = { blobs: [], end: null };
    socket.sendText({ type: "Speak", text });
    socket.sendFlush({ type: "Flush" });
    while (current.end === null) await new Promise((r) => setTimeout(r, 5));
    const audio = Buffer.concat(await Promise.all(current.blobs.map(async (b) => Buffer.from(await b.arrayBuffer()))));
    out.push({ audio, end: current.end });
  }
  socket.sendClose({ type: "Close" });
  await closed;
  socket.close();
  return out;
}

const speakTexts = (frames: Array<string | Uint8Array>) =>
  frames.map((f) => JSON.parse(String(f)) as { type: string; text?: string }).filter((m) => m.type === "Speak").map((m) => m.text);

describe("Deepgram speak WebSocket: generation failover", () => {
  for (const how of ["error", "drop", "close", "stall"] as const) {
    it(`a generation the primary fails before its first audio (${how}) is voiced by the backup, unseen by the SDK`, async () => {
      const app = await gatewayApp(YAML());
      try {
        primary.speakLegs = [{ how, at: 1 }];
        const session = `dg-before-${how}`;
        const out = await speak(app, session);
        // Every generation's whole audio, once, then its Flushed.
        expect(out.map((g) => g.end)).toEqual(["Flushed", "Flushed", "Flushed"]);
        for (const [i, g] of out.entries()) expect(g.audio.equals(Buffer.from(ttsAudioFor(TEXTS[i] as string)))).toBe(true);
        expect(backup.seen).toHaveLength(1);
        expect(backup.seen[0]?.query.get("model")).toBe("aura-2-thalia-en");
        expect(speakTexts(backup.seen[0]?.frames ?? [])).toEqual([TEXTS[1], TEXTS[2]]);
        // What each vendor voiced is what its leg billed.
        expect(primary.truth[0]?.characters).toBe(chars(TEXTS[0] as string));
        expect(backup.truth[0]?.characters).toBe(chars(TEXTS[1] as string) + chars(TEXTS[2] as string));
        await expectFailedOver(app, session, { first: MODEL, second: BACKUP_MODEL, how, firstCharacters: chars(TEXTS[0] as string), secondCharacters: chars(TEXTS[1] as string) + chars(TEXTS[2] as string), route: /route="\/deepgram\/v1\/speak"/ });
      } finally {
        await app.close();
      }
    });
  }

  it("a generation the primary fails after its first audio ends with Deepgram's Error message; the stream goes on, on the backup", async () => {
    const app = await gatewayApp(YAML());
    try {
      primary.speakLegs = [{ how: "drop", at: 1, afterAudio: true }];
      const session = "dg-after-audio";
      const out = await speak(app, session);
      expect(out[0]?.end).toBe("Flushed");
      expect(out[1]?.end).toMatch(/^Error: the vendor failed mid-generation: upstream connection lost mid-stream/);
      // The part of its audio the primary sent, and nothing more.
      expect(out[1]?.audio.equals(Buffer.from(ttsAudioFor(TEXTS[1] as string)).subarray(0, 1024))).toBe(true);
      expect(out[2]?.end).toBe("Flushed");
      expect(out[2]?.audio.equals(Buffer.from(ttsAudioFor(TEXTS[2] as string)))).toBe(true);
      expect(speakTexts(backup.seen[0]?.frames ?? [])).toEqual([TEXTS[2]]);
      const rows = await legRows(app, session, [MODEL, BACKUP_MODEL]);
      expect(rows.find((r) => r.model_id === MODEL)).toMatchObject({ status: "error", characters: chars(TEXTS[0] as string) + chars(TEXTS[1] as string) });
      expect(rows.find((r) => r.model_id === BACKUP_MODEL)).toMatchObject({ status: "fallback", fallback_from: MODEL, characters: chars(TEXTS[2] as string) });
    } finally {
      await app.close();
    }
  });
});
