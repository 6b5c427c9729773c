/**
 * Transcript messages across a failover seam, as pure functions over parsed JSON: results of a new
 * vendor leg moved onto the client's timeline, finals the client already has suppressed, and the
 * OpenAI realtime transcription protocol translated to Deepgram's live `Results` (and back), so a
 * client speaking one protocol can be served by the other vendor.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** A result's place on a timeline (seconds) and whether it is final. */
export interface ResultSpan {
  start: number;
  end: number;
  isFinal: boolean;
}

/** The span of a Deepgram `Results` message, or null for any other message. */
export function deepgramResultSpan(msg: unknown): ResultSpan | null {
  if (!isObject(msg) || msg.type !== "Results") return null;
  const start = num(msg.start);
  const duration = num(msg.duration);
  if (start === null || duration === null) return null;
  return { start, end: start + duration, isFinal: msg.is_final === true };
}

/** A Deepgram `Results` message moved `offset` seconds later (its start and every word's times). */
export function shiftDeepgramResult(msg: Json, offset: number): Json {
  if (offset === 0) return msg;
  const channel = isObject(msg.channel) ? msg.channel : null;
  const alternatives = Array.isArray(channel?.alternatives) ? channel.alternatives : [];
  return {
    ...msg,
    start: (num(msg.start) ?? 0) + offset,
    channel: {
      ...channel,
      alternatives: alternatives.map((alt) =>
        isObject(alt) && Array.isArray(alt.words)
          ? {
              ...alt,
              words: alt.words.map((w) => (isObject(w) ? { ...w, start: (num(w.start) ?? 0) + offset, end: (num(w.end) ?? 0) + offset } : w)),
            }
          : alt,
      ),
    },
  };
}

/**
 * Keeps finals from repeating across legs: the replayed audio overlaps what the failed leg had
 * finalized by up to a frame, so a result of the new leg that ends within what the client already
 * has as final is dropped. Interim results may restart (documented), finals never repeat.
 */
export class FinalsGate {
  /** End (client timeline, seconds) of the last final the client received. */
  private lastFinalEnd = 0;
  /** Tolerance for vendors' rounding of times (10 ms). */
  private static readonly EPSILON = 0.01;

  get finalizedUntil(): number {
    return this.lastFinalEnd;
  }

  /** True when a result on the client's timeline should reach the client; a passing final moves the mark. */
  admit(span: ResultSpan): boolean {
    if (span.end <= this.lastFinalEnd + FinalsGate.EPSILON) return false;
    if (span.isFinal) this.lastFinalEnd = span.end;
    return true;
  }
}

/** What the client's Deepgram SDK needs in a `Results` message (the LiveKit plugin reads metadata.request_id). */
export function deepgramResults(r: { transcript: string; start: number; end: number; isFinal: boolean; requestId: string; model: string }): Json {
  return {
    type: "Results",
    channel_index: [0, 1],
    duration: Math.max(0, r.end - r.start),
    start: r.start,
    is_final: r.isFinal,
    speech_final: r.isFinal,
    from_finalize: false,
    channel: { alternatives: [{ transcript: r.transcript, confidence: 1, words: [] }] },
    metadata: { request_id: r.requestId, model_info: { name: r.model, version: "", arch: "" }, model_uuid: "" },
  };
}

/**
 * OpenAI realtime transcription server events → Deepgram `Results` on the client's timeline.
 * OpenAI times speech by `input_audio_buffer.speech_started/stopped` (ms into the leg's audio);
 * `legStart` is where the leg's audio begins on the client's timeline (seconds).
 */
export class OpenAiToDeepgram {
  private readonly items = new Map<string, { start: number; end: number | null; text: string }>();
  /** End of the last thing heard, for items whose speech events never came (VAD off). */
  private lastEnd: number;

  constructor(
    private readonly legStart: number,
    private readonly requestId: string,
    private readonly model: string,
  ) {
    this.lastEnd = legStart;
  }

  /**
   * The Deepgram messages for one OpenAI event (none for events with no client counterpart).
   * `heardSeconds`: the leg's audio sent so far, where an item committed without a `speech_stopped`
   * (a client's commit, VAD off) ends.
   */
  translate(event: unknown, heardSeconds?: number): Json[] {
    if (!isObject(event) || typeof event.type !== "string") return [];
    const id = typeof event.item_id === "string" ? event.item_id : "";
    switch (event.type) {
      case "input_audio_buffer.speech_started": {
        const at = this.legStart + (num(event.audio_start_ms) ?? 0) / 1000;
        this.items.set(id, { start: at, end: null, text: "" });
        return [];
      }
      case "input_audio_buffer.speech_stopped": {
        const item = this.item(id);
        item.end = this.legStart + (num(event.audio_end_ms) ?? 0) / 1000;
        this.lastEnd = Math.max(this.lastEnd, item.end);
        return [];
      }
      case "input_audio_buffer.committed": {
        const item = this.item(id);
        if (item.end === null && heardSeconds !== undefined) {
          item.end = Math.max(item.start, this.legStart + heardSeconds);
          this.lastEnd = Math.max(this.lastEnd, item.end);
        }
        return [];
      }
      case "conversation.item.input_audio_transcription.failed":
        this.items.delete(id);
        return [];
      case "conversation.item.input_audio_transcription.delta": {
        const item = this.item(id);
        item.text += typeof event.delta === "string" ? event.delta : "";
        return [this.results(item, false)];
      }
      case "conversation.item.input_audio_transcription.completed": {
        const item = this.item(id);
        if (typeof event.transcript === "string") item.text = event.transcript;
        this.items.delete(id);
        return [this.results(item, true)];
      }
      default:
        return [];
    }
  }

  private item(id: string) {
    let item = this.items.get(id);
    if (!item) {
      item = { start: this.lastEnd, end: null, text: "" };
      this.items.set(id, item);
    }
    return item;
  }

  private results(item: { start: number; end: number | null; text: string }, isFinal: boolean): Json {
    const end = item.end ?? Math.max(item.start, this.lastEnd);
    return deepgramResults({ transcript: item.text, start: item.start, end, isFinal, requestId: this.requestId, model: this.model });
  }
}

/**
 * Deepgram `Results` → OpenAI realtime transcription events: each final becomes one item, timed as
 * OpenAI's VAD times one (`speech_started` / `speech_stopped` in ms of the leg's audio, `committed`),
 * then its transcript as one delta and the completion.
 */
export class DeepgramToOpenAi {
  private seq = 0;

  constructor(private readonly itemPrefix: string) {}

  translate(msg: unknown): Json[] {
    const span = deepgramResultSpan(msg);
    if (!span?.isFinal || !isObject(msg)) return [];
    const channel = isObject(msg.channel) ? msg.channel : null;
    const alt = Array.isArray(channel?.alternatives) && isObject(channel.alternatives[0]) ? channel.alternatives[0] : null;
    const transcript = typeof alt?.transcript === "string" ? alt.transcript : "";
    if (transcript === "") return [];
    const item_id = `${this.itemPrefix}_${++this.seq}`;
    const event_id = (kind: string) => `${item_id}_${kind}`;
    return [
      { type: "input_audio_buffer.speech_started", event_id: event_id("start"), item_id, audio_start_ms: Math.round(span.start * 1000) },
      { type: "input_audio_buffer.speech_stopped", event_id: event_id("stop"), item_id, audio_end_ms: Math.round(span.end * 1000) },
      { type: "input_audio_buffer.committed", event_id: event_id("commit"), item_id, previous_item_id: null },
      { type: "conversation.item.input_audio_transcription.delta", event_id: event_id("delta"), item_id, content_index: 0, delta: transcript },
      { type: "conversation.item.input_audio_transcription.completed", event_id: event_id("done"), item_id, content_index: 0, transcript },
    ];
  }
}
