import { describe, expect, it } from "vitest";
import {
  DeepgramToOpenAi,
  deepgramResultSpan,
  deepgramResults,
  FinalsGate,
  OpenAiToDeepgram,
  shiftDeepgramResult,
} from "../../../src/gateway/failover/transcripts.js";

const dg = (transcript: string, start: number, duration: number, isFinal: boolean) => ({
  type: "Results",
  start,
  duration,
  is_final: isFinal,
  speech_final: isFinal,
  channel: { alternatives: [{ transcript, confidence: 0.9, words: [{ word: transcript, start, end: start + duration }] }] },
  metadata: { request_id: "r1" },
});

describe("failover transcripts", () => {
  it("moves a new leg's result onto the client's timeline, words included", () => {
    const shifted = shiftDeepgramResult(dg("hello", 0.5, 1, true), 12);
    expect(deepgramResultSpan(shifted)).toEqual({ start: 12.5, end: 13.5, isFinal: true });
    const words = (shifted.channel as { alternatives: { words: { start: number; end: number }[] }[] }).alternatives[0]?.words;
    expect(words).toEqual([{ word: "hello", start: 12.5, end: 13.5 }]);
  });

  it("never lets a final through twice, while later interims and finals pass", () => {
    const gate = new FinalsGate();
    expect(gate.admit({ start: 0, end: 2, isFinal: true })).toBe(true);
    // The replayed audio overlaps the final's end: the new leg's re-recognition of it is dropped.
    expect(gate.admit({ start: 1.5, end: 2.004, isFinal: true })).toBe(false);
    expect(gate.admit({ start: 1.8, end: 1.9, isFinal: false })).toBe(false);
    expect(gate.admit({ start: 2, end: 2.6, isFinal: false })).toBe(true);
    expect(gate.admit({ start: 2, end: 3, isFinal: true })).toBe(true);
    expect(gate.finalizedUntil).toBe(3);
  });

  it("translates OpenAI transcription events to Deepgram Results with times on the client's timeline", () => {
    const t = new OpenAiToDeepgram(10, "vg_1", "gpt-4o-transcribe");
    expect(t.translate({ type: "input_audio_buffer.speech_started", item_id: "a", audio_start_ms: 500 })).toEqual([]);
    t.translate({ type: "input_audio_buffer.speech_stopped", item_id: "a", audio_end_ms: 1700 });
    const [interim] = t.translate({ type: "conversation.item.input_audio_transcription.delta", item_id: "a", delta: "good " });
    expect(deepgramResultSpan(interim)).toEqual({ start: 10.5, end: 11.7, isFinal: false });
    const [final] = t.translate({ type: "conversation.item.input_audio_transcription.completed", item_id: "a", transcript: "good morning" });
    expect(final).toMatchObject({ type: "Results", is_final: true, speech_final: true, metadata: { request_id: "vg_1" } });
    expect(final).toMatchObject({ channel: { alternatives: [{ transcript: "good morning" }] } });
    expect(deepgramResultSpan(final)).toEqual({ start: 10.5, end: 11.7, isFinal: true });
    expect(t.translate({ type: "session.updated" })).toEqual([]);
    expect(t.translate("not an event")).toEqual([]);
  });

  it("ends an item committed without speech events where the leg's audio had reached", () => {
    const t = new OpenAiToDeepgram(2, "vg_1", "gpt-4o-transcribe");
    t.translate({ type: "input_audio_buffer.speech_started", item_id: "a", audio_start_ms: 0 });
    t.translate({ type: "input_audio_buffer.speech_stopped", item_id: "a", audio_end_ms: 400 });
    // A VAD item keeps the end its speech_stopped gave; the client's commit ends at what was heard.
    t.translate({ type: "input_audio_buffer.committed", item_id: "a" }, 0.9);
    expect(deepgramResultSpan(t.translate({ type: "conversation.item.input_audio_transcription.completed", item_id: "a", transcript: "one" })[0])).toEqual({ start: 2, end: 2.4, isFinal: true });
    t.translate({ type: "input_audio_buffer.committed", item_id: "b" }, 0.7);
    expect(deepgramResultSpan(t.translate({ type: "conversation.item.input_audio_transcription.completed", item_id: "b", transcript: "two" })[0])).toEqual({ start: 2.4, end: 2.7, isFinal: true });
    t.translate({ type: "input_audio_buffer.committed", item_id: "c" }, 0.8);
    expect(t.translate({ type: "conversation.item.input_audio_transcription.failed", item_id: "c" })).toEqual([]);
  });

  it("translates Deepgram finals to OpenAI completed items and skips interims and silence", () => {
    const t = new DeepgramToOpenAi("vg");
    expect(t.translate(dg("maybe", 0, 1, false))).toEqual([]);
    expect(t.translate(dg("", 0, 1, true))).toEqual([]);
    const events = t.translate(dg("yes please", 0, 1, true));
    expect(events.map((e) => e.type)).toEqual([
      "input_audio_buffer.speech_started",
      "input_audio_buffer.speech_stopped",
      "input_audio_buffer.committed",
      "conversation.item.input_audio_transcription.delta",
      "conversation.item.input_audio_transcription.completed",
    ]);
    expect(events[0]).toMatchObject({ item_id: "vg_1", audio_start_ms: 0 });
    expect(events[1]).toMatchObject({ item_id: "vg_1", audio_end_ms: 1000 });
    expect(events[4]).toMatchObject({ item_id: "vg_1", transcript: "yes please" });
  });

  it("builds Results the Deepgram clients parse (metadata.request_id present)", () => {
    const r = deepgramResults({ transcript: "x", start: 1, end: 2, isFinal: true, requestId: "id", model: "m" });
    expect(r).toMatchObject({ start: 1, duration: 1, metadata: { request_id: "id" } });
  });
});
