import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CartesiaStub } from "../../support/stubs/cartesia.js";
import { ttsAudioFor } from "../../support/stubs/deepgram.js";
import { ElevenLabsStub } from "../../support/stubs/elevenlabs.js";
import { gatewayApp, KEYS_YAML, PROVIDER_KEY } from "../support.js";
import { expectFailedOver, STALL_MS, withCartesiaSocket } from "./tts-support.js";

/**
 * Cross-vendor TTS failover: a @cartesia/cartesia-js tts.websocket() client whose Cartesia vendor
 * fails a generation before its first audio, retried on the ElevenLabs candidate of fallbacks.tts
 * (multi-stream-input, translated both ways) where `voices:` maps the requested voice there and the
 * output is raw pcm_s16le at a rate ElevenLabs offers; otherwise that candidate is skipped.
 */
const cartesia = new CartesiaStub();
const elevenlabs = new ElevenLabsStub();
beforeAll(async () => {
  await Promise.all([cartesia.start(), elevenlabs.start()]);
});
afterAll(async () => {
  await Promise.all([cartesia.stop(), elevenlabs.stop()]);
});
beforeEach(() => {
  cartesia.reset();
  cartesia.legs = [];
  elevenlabs.reset();
  elevenlabs.legs = [];
});

const FIRST = "cartesia/sonic-2";
const SECOND = "elevenlabs/eleven_flash_v2_5";
const YAML = (voices: string) => `${KEYS_YAML}
providers:
  cartesia: { api_key: "${PROVIDER_KEY}", base_url: "${cartesia.url}" }
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${elevenlabs.url}/v1" }
models:
  tts:
    ${FIRST}: { provider: cartesia, model: sonic-2 }
    ${SECOND}: { provider: elevenlabs, model: eleven_flash_v2_5 }
fallbacks:
  tts: [${FIRST}, ${SECOND}]
projects:
  voice: {}
gateway:
  streams: { stall_ms: ${STALL_MS} }
${voices}`;
const MAPPED = "voices:\n  voice-1: { elevenlabs: el-voice-1 }\n";

const TEXTS = ["the first sentence", "the second one", "and a third"];
const chars = (s: string) => [...s].length;

/** Each text as one generation through the SDK in turn: its event types (or its error) and the audio it got. */
function speak(app: Awaited<ReturnType<typeof gatewayApp>>, session: string, texts: string[], sampleRate = 24000): Promise<{ out: string[]; audio: Buffer[] }> {
  return withCartesiaSocket(app, session, async (ws) => {
    const out: string[] = [];
    const audio: Buffer[] = [];
    for (const transcript of texts) {
      const types: string[] = [];
      const bytes: Buffer[] = [];
      try {
        for await (const event of ws.generate({
          model_id: FIRST,
          transcript,
          voice: { mode: "id" as const, id: "voice-1" },
          output_format: { container: "raw" as const, encoding: "pcm_s16le" as const, sample_rate: sampleRate as 24000 },
        })) {
          types.push(event.type);
          if (event.type === "chunk") bytes.push(Buffer.from(event.audio ?? []));
        }
        out.push(types.join(","));
      } catch (err) {
        out.push(`error: ${(err as Error).message}`);
      }
      audio.push(Buffer.concat(bytes));
    }
    return { out, audio };
  });
}

/** The texts ElevenLabs was sent to voice (the opener's single space included). */
const texts = (frames: Array<string | Uint8Array>) => frames.map((f) => (JSON.parse(String(f)) as { text?: string }).text).filter((t) => t !== undefined);

describe("Cartesia tts/websocket: failover to ElevenLabs where voices: maps the voice", () => {
  for (const how of ["error", "drop", "close", "stall"] as const) {
    it(`a generation Cartesia fails before its first audio (${how}) is voiced by ElevenLabs, in Cartesia's shapes`, async () => {
      const app = await gatewayApp(YAML(MAPPED));
      try {
        cartesia.legs = [{ how, at: 1 }];
        const session = `xtts-${how}`;
        const { out, audio } = await speak(app, session, TEXTS);
        expect(out).toEqual(["chunk,done", "chunk,done", "chunk,done"]);
        // Every generation's audio arrived once, whole: the first from Cartesia, the others from ElevenLabs.
        expect(audio).toEqual(TEXTS.map((t) => Buffer.from(ttsAudioFor(t))));
        expect(elevenlabs.seen).toHaveLength(1);
        const seen = elevenlabs.seen[0];
        expect(seen?.path).toBe("/v1/text-to-speech/el-voice-1/multi-stream-input");
        expect(seen?.query.get("output_format")).toBe("pcm_24000");
        expect(seen?.query.get("model_id")).toBe("eleven_flash_v2_5");
        expect(texts(seen?.frames ?? [])).toEqual([" ", TEXTS[1], " ", TEXTS[2]]);
        await expectFailedOver(app, session, {
          first: FIRST,
          second: SECOND,
          how,
          firstCharacters: chars(TEXTS[0] as string),
          secondCharacters: chars(TEXTS[1] as string) + chars(TEXTS[2] as string),
          route: /route="\/cartesia\/tts\/websocket"/,
        });
      } finally {
        await app.close();
      }
    });
  }

  const skipped: Array<[string, string, number]> = [
    ["voices: does not map the voice for it", "voices:\n  other-voice: { elevenlabs: el-voice-2 }\n", 24000],
    ["the output format has no ElevenLabs counterpart (pcm at 8 kHz)", MAPPED, 8000],
  ];
  for (const [why, voices, rate] of skipped) {
    it(`the ElevenLabs candidate is skipped where ${why}: the generation fails in-band as the vendor said`, async () => {
      const app = await gatewayApp(YAML(voices));
      try {
        cartesia.legs = [{ how: "error", at: 1 }];
        const { out } = await speak(app, `xtts-skip-${rate}`, TEXTS.slice(0, 2), rate);
        expect(out[0]).toBe("chunk,done");
        expect(out[1]).toMatch(/^error: .*stub: scripted vendor failure/);
        expect(elevenlabs.seen).toHaveLength(0);
      } finally {
        await app.close();
      }
    });
  }
});
