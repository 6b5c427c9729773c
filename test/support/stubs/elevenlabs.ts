import { chunked, type StubTruth, ttsAudioFor } from "./deepgram.js";
import { failLeg, type TtsLegScript } from "./tts-legs.js";
import { StubServer, type WsContext } from "./vendor-stub.js";

function parseJson(bytes: Uint8Array | string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("utf8"));
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * ElevenLabs: POST /v1/text-to-speech/{voice} and /stream (audio for `text`), /with-timestamps and
 * /stream/with-timestamps (base64 audio with character alignment, JSON or one object per line), and WS
 * /v1/text-to-speech/{voice}/multi-stream-input and stream-input (an `audio` message per text
 * message, `isFinal` on flush/close_context or stream-input's `text: ""`; the single-space opener
 * synthesizes nothing; an error message is followed by close 1008, as ElevenLabs does).
 */
export class ElevenLabsStub extends StubServer {
  /** Scripts its stream-input and multi-stream-input connections in order; past the list: normal service. */
  legs: TtsLegScript[] = [];

  constructor() {
    super();
    const tts = async (ctx: Parameters<Parameters<StubServer["http"]>[2]>[0]) => {
      const body = parseJson(ctx.req.body);
      if (!body || typeof body.text !== "string") {
        await ctx.answer(400, { "content-type": "application/json" }, [JSON.stringify({ detail: { status: "invalid_json" } })]);
        return;
      }
      const audio = ttsAudioFor(body.text);
      this.truth.push({ path: ctx.req.path, characters: [...body.text].length, audioOut: audio });
      await ctx.answer(200, { "content-type": "audio/mpeg", "request-id": "el-1" }, chunked(audio));
    };
    this.http("POST", "/v1/text-to-speech/:voice", tts);
    this.http("POST", "/v1/text-to-speech/:voice/stream", tts);
    // with-timestamps: JSON {audio_base64, alignment, normalized_alignment}; streamed: one such object per line.
    const withTimestamps = (streamed: boolean) => async (ctx: Parameters<Parameters<StubServer["http"]>[2]>[0]) => {
      const body = parseJson(ctx.req.body);
      if (!body || typeof body.text !== "string") {
        await ctx.answer(400, { "content-type": "application/json" }, [JSON.stringify({ detail: { status: "invalid_json" } })]);
        return;
      }
      const audio = ttsAudioFor(body.text);
      this.truth.push({ path: ctx.req.path, characters: [...body.text].length, audioOut: audio });
      const chars = [...body.text];
      const alignment = { characters: chars, character_start_times_seconds: chars.map((_, i) => i * 0.05), character_end_times_seconds: chars.map((_, i) => (i + 1) * 0.05) };
      const piece = (bytes: Uint8Array) => JSON.stringify({ audio_base64: Buffer.from(bytes).toString("base64"), alignment, normalized_alignment: alignment });
      if (!streamed) await ctx.answer(200, { "content-type": "application/json" }, [piece(audio)]);
      else await ctx.answer(200, { "content-type": "application/json" }, chunked(audio).map((c) => `${piece(c)}\n`));
    };
    this.http("POST", "/v1/text-to-speech/:voice/with-timestamps", withTimestamps(false));
    this.http("POST", "/v1/text-to-speech/:voice/stream/with-timestamps", withTimestamps(true));

    this.ws("/v1/text-to-speech/:voice/multi-stream-input", (ws) => this.streamInput(ws, true));
    this.ws("/v1/text-to-speech/:voice/stream-input", (ws) => this.streamInput(ws, false));
  }

  /**
   * One WS connection: multi-stream-input (contexts, `contextId` on answers) or stream-input (one
   * unnamed context; `text: ""` ends it with `isFinal`, then close 1000). A generation for `legs` is a
   * context (multi) or a text to voice (stream-input).
   */
  private streamInput(ws: WsContext, multi: boolean): void {
    const truth: StubTruth = { path: ws.req.path, characters: 0 };
    this.truth.push(truth);
    const script = this.legs.shift() ?? null;
    const contexts: string[] = [];
    let texts = 0;
    let failed = false;
    ws.onMessage((data) => {
      if (failed) return;
      const msg = parseJson(data);
      if (!msg) {
        ws.close(1008, "invalid message");
        return;
      }
      const contextId = typeof msg.context_id === "string" ? msg.context_id : "default";
      const named = multi ? { contextId } : {};
      if (msg.close_socket === true) {
        ws.close(1000);
        return;
      }
      if (!contexts.includes(contextId)) contexts.push(contextId);
      const voiced = typeof msg.text === "string" && msg.text.trim() !== "";
      const generation = multi ? contexts.indexOf(contextId) : texts;
      if (voiced) texts++;
      // The scripted failure of generation `at`, on its first text to voice.
      if (script && generation === script.at && voiced) {
        // Every scripted failure ends the connection (a refusal too: its error is followed by close 1008).
        failed = true;
        const text = msg.text as string;
        const audio = script.afterAudio ? ws.send(JSON.stringify({ audio: Buffer.from(ttsAudioFor(text)).toString("base64"), isFinal: false, ...named })) : Promise.resolve();
        if (script.afterAudio) truth.characters = (truth.characters ?? 0) + [...text].length;
        const error = script.how === "refuse" ? { message: "stub: invalid input", error: "invalid_input_message", code: 1008 } : { message: "stub: scripted vendor failure", error: "internal_server_error", code: 1011 };
        void audio.then(() => failLeg(ws, script.how, JSON.stringify(error), { code: 1008, reason: error.error }));
        return;
      }
      // A text containing FAIL: ElevenLabs' error message, then close 1008.
      if (typeof msg.text === "string" && msg.text.includes("FAIL")) {
        void ws.send(JSON.stringify({ message: "stub: invalid input", error: "invalid_input_message", code: 1008 })).then(() => ws.close(1008, "invalid_input_message"));
        return;
      }
      if (voiced) {
        const text = msg.text as string;
        truth.characters = (truth.characters ?? 0) + [...text].length;
        void ws.send(JSON.stringify({ audio: Buffer.from(ttsAudioFor(text)).toString("base64"), isFinal: false, ...named }));
      }
      if (multi && (msg.flush === true || msg.close_context === true)) void ws.send(JSON.stringify({ isFinal: true, contextId }));
      if (!multi && msg.text === "") void ws.send(JSON.stringify({ isFinal: true })).then(() => ws.close(1000));
    });
  }
}
