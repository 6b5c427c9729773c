import type { Units, UpstreamTarget } from "../protocol.js";
import type { StreamLine, StreamMeter } from "../ws/relay.js";
import { valueAfterKey } from "../protocols/json-body.js";
import { jsonObject } from "./stt-units.js";
import { cartesiaMessageCharacters, elevenlabsMessageCharacters } from "./tts-units.js";

/** One generation of a TTS stream (a Cartesia or ElevenLabs context) while it runs. */
interface Generation {
  target: UpstreamTarget;
  characters: number;
  /** The vendor sent audio for it: its characters are billed even if it fails afterwards. */
  audio: boolean;
}

export type TtsVendor = "cartesia" | "elevenlabs";

const KEY = {
  type: Buffer.from('"type"'),
  cartesiaContext: Buffer.from('"context_id"'),
  elevenlabsContext: Buffer.from('"contextId"'),
  audio: Buffer.from('"audio"'),
  isFinal: Buffer.from('"isFinal"'),
};

/**
 * A short JSON string value in a frame's bytes (`"key":"value"`), found without parsing the frame:
 * TTS server frames carry large base64 audio, and only their type and context are read. null when
 * absent, not a string, or escaped (then the caller parses).
 */
export function shortStringField(frame: Buffer, key: Buffer): string | null {
  const at = frame.indexOf(key);
  if (at < 0) return null;
  const i = valueAfterKey(frame, at + key.length);
  if (i < 0 || frame[i] !== 0x22 /* '"' */) return null;
  const end = frame.indexOf(0x22, i + 1);
  if (end < 0 || end - i > 256) return null;
  const value = frame.toString("utf8", i + 1, end);
  return value.includes("\\") ? null : value;
}

/** Whether `"key":` is followed by a non-empty string (base64 audio holds no quotes: no false match). */
export function stringValueAt(frame: Buffer, key: Buffer): boolean {
  const at = frame.indexOf(key);
  if (at < 0) return false;
  const i = valueAfterKey(frame, at + key.length);
  return i >= 0 && frame[i] === 0x22 && frame[i + 1] !== 0x22;
}

/** Whether `"key":` is followed by `true`. */
export function trueAt(frame: Buffer, key: Buffer): boolean {
  const at = frame.indexOf(key);
  if (at < 0) return false;
  const i = valueAfterKey(frame, at + key.length);
  return i >= 0 && frame[i] === 0x74 /* 't' */;
}

/**
 * The meter of a context-based TTS stream (Cartesia tts/websocket, ElevenLabs stream-input and
 * multi-stream-input): characters per generation, under the model each generation ran on, billed as
 * the vendor served them — a generation the vendor answered with an error before any audio is billed
 * 0 characters and recorded as its own `error` line with the vendor's message. `units()` is the
 * stream's own model; generations on another model of the same provider and failed ones are `lines()`.
 */
export class TtsContextLedger implements StreamMeter {
  private readonly open = new Map<string, Generation>();
  /** Characters of finished generations per model. */
  private readonly finished = new Map<UpstreamTarget, number>();
  private readonly failed: StreamLine[] = [];
  private last: { context: string; characters: number } | null = null;
  private streamError: string | null = null;
  private answered = false;

  constructor(
    private readonly vendor: TtsVendor,
    private readonly primary: UpstreamTarget,
  ) {}

  client(frame: Buffer, isBinary: boolean): boolean {
    this.last = null;
    if (isBinary) return false;
    const msg = jsonObject(frame.toString("utf8"));
    if (!msg) return false;
    const characters = this.vendor === "cartesia" ? cartesiaMessageCharacters(msg) : elevenlabsMessageCharacters(msg);
    if (characters === 0) return false;
    const context = typeof msg.context_id === "string" ? msg.context_id : "";
    const g = this.open.get(context);
    if (g) g.characters += characters;
    else this.open.set(context, { target: this.primary, characters, audio: false });
    this.last = { context, characters };
    return true;
  }

  /** The generation of the frame just metered runs on `target` (a model the gate resolved). */
  assignLast(target: UpstreamTarget): void {
    const g = this.last ? this.open.get(this.last.context) : undefined;
    if (g) g.target = target;
  }

  /** The frame just metered was refused in-band, never sent: its characters are not billed. */
  unbillLast(): void {
    if (!this.last) return;
    const g = this.open.get(this.last.context);
    if (g) {
      g.characters -= this.last.characters;
      if (g.characters <= 0 && !g.audio) this.open.delete(this.last.context);
    }
    this.last = null;
  }

  /** A generation without audio that another vendor serves instead (a failover): it bills nothing here. */
  abandon(context: string): void {
    const g = this.open.get(context);
    if (g && !g.audio) this.open.delete(context);
  }

  upstream(frame: Buffer, isBinary: boolean): boolean {
    if (isBinary) return false;
    return this.vendor === "cartesia" ? this.cartesiaServer(frame) : this.elevenlabsServer(frame);
  }

  private cartesiaServer(frame: Buffer): boolean {
    let type = shortStringField(frame, KEY.type);
    let context = shortStringField(frame, KEY.cartesiaContext);
    if (type === null) {
      const msg = jsonObject(frame.toString("utf8"));
      type = typeof msg?.type === "string" ? msg.type : null;
      context = typeof msg?.context_id === "string" ? msg.context_id : context;
    }
    if (type === "chunk") return this.audioFor(context ?? "");
    if (type === "done") this.finish(context ?? "");
    if (type === "error") {
      const msg = jsonObject(frame.toString("utf8")) ?? {};
      const message = vendorMessage(msg);
      if (context !== null && this.open.has(context)) this.fail(context, message);
      else if (context === null) this.failAll(message);
    }
    return false;
  }

  private elevenlabsServer(frame: Buffer): boolean {
    const context = shortStringField(frame, KEY.elevenlabsContext) ?? "";
    if (stringValueAt(frame, KEY.audio)) {
      const answered = this.audioFor(context);
      if (trueAt(frame, KEY.isFinal)) this.finish(context);
      return answered;
    }
    const msg = jsonObject(frame.toString("utf8"));
    if (!msg) return false;
    if (msg.isFinal === true) this.finish(context);
    // ElevenLabs' error message: {message, error, code}, then it closes the socket 1008.
    if (typeof msg.error === "string" || (typeof msg.message === "string" && typeof msg.code === "number")) this.failAll(vendorMessage(msg));
    return false;
  }

  /** Audio for a context; true for the stream's first audio (the TTFB frame). */
  private audioFor(context: string): boolean {
    const g = this.open.get(context);
    if (g) g.audio = true;
    if (this.answered) return false;
    this.answered = true;
    return true;
  }

  private finish(context: string): void {
    const g = this.open.get(context);
    if (!g) return;
    this.open.delete(context);
    this.finished.set(g.target, (this.finished.get(g.target) ?? 0) + g.characters);
  }

  private fail(context: string, message: string): void {
    const g = this.open.get(context);
    if (!g) return;
    this.open.delete(context);
    this.failed.push({ target: g.target, status: "error", error: message, units: { characters: g.audio ? g.characters : 0 } });
  }

  /** An error for the whole stream: each unfinished generation fails; the stream's record carries the message. */
  private failAll(message: string): void {
    this.streamError = message;
    for (const [context, g] of this.open) {
      // Those with audio keep their characters on the stream's record; those without bill nothing.
      if (!g.audio) this.open.delete(context);
    }
  }

  units(): Units {
    let characters = this.finished.get(this.primary) ?? 0;
    for (const g of this.open.values()) if (g.target === this.primary) characters += g.characters;
    return { characters };
  }

  error(): string | null {
    return this.streamError;
  }

  lines(): StreamLine[] {
    const other = new Map<UpstreamTarget, number>();
    for (const [target, n] of this.finished) if (target !== this.primary) other.set(target, n);
    for (const g of this.open.values()) if (g.target !== this.primary) other.set(g.target, (other.get(g.target) ?? 0) + g.characters);
    const lines: StreamLine[] = [...other].map(([target, characters]) => ({ target, status: "success", units: { characters } }));
    return [...lines, ...this.failed];
  }
}

/** The vendor's own words from an error message (Cartesia: message/title/error; ElevenLabs: message/error). */
export function vendorMessage(msg: Record<string, unknown>): string {
  for (const k of ["message", "error", "title", "description"]) {
    const v = msg[k];
    if (typeof v === "string" && v.trim() !== "") return v.slice(0, 2000);
  }
  return "the vendor reported an error";
}
