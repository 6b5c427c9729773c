import { describe, expect, it } from "vitest";
import {
  deepgramAudioFormat,
  deepgramLiveFrame,
  deepgramLiveSeconds,
  deepgramPrerecordedSeconds,
  linear16Seconds,
  openaiTranscriptionUsage,
  rawAudioSeconds,
  realtimeClientFrame,
  realtimeInputBytesPerSecond,
  realtimeServerFrame,
  wavSeconds,
} from "../../src/gateway/audio/stt-units.js";
import {
  cartesiaWsCharacters,
  characterCount,
  deepgramSpeakWsCharacters,
  elevenlabsWsCharacters,
  openaiSpeechText,
} from "../../src/gateway/audio/tts-units.js";
import { TtsContextLedger } from "../../src/gateway/audio/tts-contexts.js";
import { wavFile } from "../support/stubs/audio.js";

describe("STT units from the wire", () => {
  it("times linear16 bytes by rate and channels", () => {
    expect(linear16Seconds(32_000, 16_000, 1)).toBe(1);
    expect(linear16Seconds(96_000, 24_000, 2)).toBe(1);
    expect(linear16Seconds(100, 0, 1)).toBeNull();
  });

  it("reads Deepgram's declared format from the query, and times only raw encodings", () => {
    const f = deepgramAudioFormat(new URLSearchParams("encoding=linear16&sample_rate=48000&channels=2"));
    expect(f).toEqual({ encoding: "linear16", sampleRate: 48_000, channels: 2, multichannel: false });
    expect(rawAudioSeconds(192_000 * 3, f)).toBe(3);
    expect(rawAudioSeconds(8_000, deepgramAudioFormat(new URLSearchParams("encoding=mulaw&sample_rate=8000")))).toBe(1);
    // A container (no encoding) or a junk rate cannot be timed from bytes.
    expect(rawAudioSeconds(1000, deepgramAudioFormat(new URLSearchParams("")))).toBeNull();
    expect(rawAudioSeconds(1000, deepgramAudioFormat(new URLSearchParams("encoding=linear16&sample_rate=-5")))).toBeNull();
    expect(rawAudioSeconds(1000, deepgramAudioFormat(new URLSearchParams("encoding=opus&sample_rate=48000")))).toBeNull();
  });

  it("prefers Deepgram's Metadata.duration, then bytes, then how far results reached", () => {
    const f = deepgramAudioFormat(new URLSearchParams("encoding=linear16&sample_rate=16000"));
    expect(deepgramLiveSeconds({ metadataDuration: 2.5, audioBytes: 32_000, resultsEnd: 1 }, f)).toBe(2.5);
    expect(deepgramLiveSeconds({ metadataDuration: null, audioBytes: 32_000, resultsEnd: 0.5 }, f)).toBe(1);
    expect(deepgramLiveSeconds({ metadataDuration: null, audioBytes: 999, resultsEnd: 0.5 }, deepgramAudioFormat(new URLSearchParams()))).toBe(0.5);
  });

  it("parses Deepgram live frames without trusting their shape", () => {
    expect(deepgramLiveFrame(JSON.stringify({ type: "Metadata", duration: 4.25 })).metadataDuration).toBe(4.25);
    expect(deepgramLiveFrame(JSON.stringify({ type: "Results", start: 1.5, duration: 0.5 })).resultsEnd).toBe(2);
    expect(deepgramLiveFrame(JSON.stringify({ type: "Metadata", duration: "4" })).metadataDuration).toBeNull();
    expect(deepgramLiveFrame("not json").type).toBeNull();
    expect(deepgramLiveFrame("[1,2]").type).toBeNull();
  });

  it("bills Deepgram pre-recorded by metadata.duration, per channel when multichannel", () => {
    const mono = deepgramAudioFormat(new URLSearchParams());
    expect(deepgramPrerecordedSeconds({ metadata: { duration: 12.5, channels: 1 } }, mono)).toBe(12.5);
    const multi = deepgramAudioFormat(new URLSearchParams("multichannel=true"));
    expect(deepgramPrerecordedSeconds({ metadata: { duration: 10, channels: 2 } }, multi)).toBe(20);
    expect(deepgramPrerecordedSeconds({ results: {} }, mono)).toBeNull();
    expect(deepgramPrerecordedSeconds("x", mono)).toBeNull();
  });

  it("reads OpenAI transcription usage (duration, tokens, verbose_json duration)", () => {
    expect(openaiTranscriptionUsage({ text: "hi", usage: { type: "duration", seconds: 7 } }).seconds).toBe(7);
    expect(openaiTranscriptionUsage({ text: "hi", duration: 3.2 }).seconds).toBe(3.2);
    expect(openaiTranscriptionUsage({ usage: { type: "tokens", input_tokens: 50, output_tokens: 9 } })).toEqual({ seconds: null, inputTokens: 50, outputTokens: 9 });
    expect(openaiTranscriptionUsage(null).seconds).toBeNull();
  });

  it("times a WAV upload from its header, including a streamed WAV without a data size", () => {
    const pcm = new Uint8Array(16_000 * 2 * 3);
    expect(wavSeconds(wavFile(pcm, 16_000))).toBe(3);
    const streamed = wavFile(pcm, 16_000);
    new DataView(streamed.buffer).setUint32(40, 0xffffffff, true);
    expect(wavSeconds(streamed)).toBe(3);
    expect(wavSeconds(new TextEncoder().encode("ID3 mp3 data here"))).toBeNull();
    expect(wavSeconds(new Uint8Array(0))).toBeNull();
  });

  it("meters OpenAI realtime transcription frames", () => {
    const audio = Buffer.alloc(4800).toString("base64");
    expect(realtimeClientFrame(JSON.stringify({ type: "input_audio_buffer.append", audio })).audioBytes).toBe(4800);
    expect(realtimeClientFrame(JSON.stringify({ type: "input_audio_buffer.append", audio: Buffer.alloc(5).toString("base64") })).audioBytes).toBe(5);
    const upd = realtimeClientFrame(JSON.stringify({ type: "transcription_session.update", session: { input_audio_format: "g711_ulaw" } }));
    expect(realtimeInputBytesPerSecond(upd.inputFormat)).toBe(8000);
    const ga = realtimeClientFrame(JSON.stringify({ type: "session.update", session: { audio: { input: { format: { type: "audio/pcm", rate: 24000 } } } } }));
    expect(realtimeInputBytesPerSecond(ga.inputFormat)).toBe(48_000);
    const done = realtimeServerFrame(JSON.stringify({ type: "conversation.item.input_audio_transcription.completed", transcript: "hi", usage: { type: "duration", seconds: 2 } }));
    expect(done).toMatchObject({ transcript: true, usageSeconds: 2 });
    expect(realtimeServerFrame("{").transcript).toBe(false);
  });
});

describe("TTS characters from the wire", () => {
  it("counts code points, not UTF-16 units", () => {
    expect(characterCount("héllo 👋")).toBe(7);
    expect(openaiSpeechText({ input: "abc" })).toBe("abc");
    expect(openaiSpeechText({ input: 5 })).toBeNull();
  });

  it("skips ElevenLabs' single-space opening and empty closing messages", () => {
    expect(elevenlabsWsCharacters(JSON.stringify({ text: " ", voice_settings: {} }))).toBe(0);
    expect(elevenlabsWsCharacters(JSON.stringify({ text: "Hello there. ", context_id: "a" }))).toBe(13);
    expect(elevenlabsWsCharacters(JSON.stringify({ text: "" }))).toBe(0);
    expect(elevenlabsWsCharacters("garbage")).toBe(0);
  });

  it("counts Cartesia transcripts, not cancels; Deepgram Speak messages only", () => {
    expect(cartesiaWsCharacters(JSON.stringify({ model_id: "sonic-2", transcript: "Hi!", context_id: "c" }))).toBe(3);
    expect(cartesiaWsCharacters(JSON.stringify({ context_id: "c", cancel: true, transcript: "ignored" }))).toBe(0);
    expect(deepgramSpeakWsCharacters(JSON.stringify({ type: "Speak", text: "four" }))).toBe(4);
    expect(deepgramSpeakWsCharacters(JSON.stringify({ type: "Flush" }))).toBe(0);
  });

  it("TTS stream ledger: audio frames answer, a generation failed before audio bills 0, other models are their own lines", () => {
    const target = (modelId: string) => ({ modelId, modality: "tts" as const, providerId: "cartesia", providerType: "cartesia" as const, modelName: modelId.split("/")[1] ?? modelId, baseUrl: "", apiKey: "" });
    const sonic2 = target("cartesia/sonic-2");
    const sonic3 = target("cartesia/sonic-3");
    const ledger = new TtsContextLedger("cartesia", sonic2);
    const up = (msg: unknown) => ledger.upstream(Buffer.from(JSON.stringify(msg)), false);
    const client = (msg: unknown) => ledger.client(Buffer.from(JSON.stringify(msg)), false);
    expect(client({ context_id: "a", model_id: "sonic-2", transcript: "hello" })).toBe(true);
    expect(up({ type: "chunk", data: "AAAA", context_id: "a" })).toBe(true);
    expect(up({ type: "chunk", data: "BBBB", context_id: "a" })).toBe(false);
    up({ type: "done", context_id: "a" });
    client({ context_id: "b", model_id: "sonic-3", transcript: "four" });
    ledger.assignLast(sonic3);
    client({ context_id: "c", transcript: "failing" });
    up({ type: "error", context_id: "c", message: "vendor says no" });
    client({ context_id: "d", transcript: "refused" });
    ledger.unbillLast();
    expect(ledger.units()).toEqual({ characters: 5 });
    expect(ledger.lines()).toEqual([
      { target: sonic3, status: "success", units: { characters: 4 } },
      { target: sonic2, status: "error", error: "vendor says no", units: { characters: 0 } },
    ]);
    const eleven = new TtsContextLedger("elevenlabs", sonic2);
    expect(eleven.upstream(Buffer.from(JSON.stringify({ audio: "AAAA", isFinal: false })), false)).toBe(true);
    expect(eleven.upstream(Buffer.from(JSON.stringify({ audio: null, isFinal: true })), false)).toBe(false);
  });
});
