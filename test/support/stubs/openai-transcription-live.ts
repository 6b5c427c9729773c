import { StubServer, type StubTruth } from "./vendor-stub.js";

const BYTES_PER_SECOND = 48_000;

/** How one session fails: after `afterAppends` appends it drops its connection, or answers a server `error`. */
export interface TranscriptionLegScript {
  how: "drop" | "error";
  afterAppends: number;
}

/** One session of the stub, as it heard it. */
export interface TranscriptionSession {
  /** The client's `session.update` events, as sent. */
  updates: unknown[];
  /** Bytes of audio appended (pcm16 at 24 kHz, as the session was told). */
  bytes: number;
  /** The words it heard, in order. */
  words: string[];
}

/**
 * An OpenAI realtime transcription vendor (GA, `/v1/realtime?intent=transcription`) whose transcript
 * is scripted by the audio itself: each `wordBytes` (100 ms) of its 24 kHz pcm16 input is heard as
 * the word `w<n>`, n the middle sample's value (what test/support/stubs/deepgram-live.ts's
 * wordFrame(n) becomes once resampled). Its voice activity detection turns every two words into an item
 * (`speech_started`, `speech_stopped`, `committed`, a delta per word, `completed` with
 * `usage: {type: "duration", seconds}`); a client's `input_audio_buffer.commit` makes an item of the
 * rest (`input_audio_buffer_commit_empty` for less than 100 ms, as OpenAI answers). `failAtConnect`
 * answers an `error` event as the session opens (the quota-after-connect case) and closes 1011;
 * `legs` scripts later failures of its sessions in order.
 * `truth` holds, per session, the audio seconds it billed.
 */
export class OpenAITranscriptionLiveStub extends StubServer {
  failAtConnect = false;
  wordBytes = 4_800;
  /** Hears no speech: answers appends with nothing at all (as OpenAI does while nobody speaks). */
  silent = false;
  legs: TranscriptionLegScript[] = [];
  readonly sessions: TranscriptionSession[] = [];

  constructor() {
    super();
    this.ws("/v1/realtime", (ws) => {
      const session: TranscriptionSession = { updates: [], bytes: 0, words: [] };
      const script = this.legs.shift() ?? null;
      const WORD_BYTES = this.wordBytes;
      let appends = 0;
      this.sessions.push(session);
      const truth: StubTruth = { path: ws.req.path, audioSeconds: 0 };
      this.truth.push(truth);
      let seq = 0;
      let sent: Promise<void> = Promise.resolve();
      const send = (o: object) => {
        sent = ws.send(JSON.stringify({ event_id: `event_${++seq}`, ...o }));
      };
      let dead = false;
      send({ type: "session.created", session: { type: "transcription", id: "sess_stub" } });
      if (this.failAtConnect) {
        send({ type: "error", error: { type: "insufficient_quota", code: "insufficient_quota", message: "stub: you exceeded your current quota", param: null } });
        setTimeout(() => ws.close(1011, "quota"), 5);
        return;
      }
      let pending = Buffer.alloc(0);
      /** Words heard since the last item, and where (bytes into the session) that item's audio began. */
      let turn: string[] = [];
      let turnFrom = 0;
      let item = 0;
      const ms = (bytes: number) => (bytes * 1000) / BYTES_PER_SECOND;
      const transcribe = (itemId: string, words: string[], bytes: number) => {
        for (const [i, w] of words.entries()) send({ type: "conversation.item.input_audio_transcription.delta", item_id: itemId, content_index: 0, delta: i === 0 ? w : ` ${w}` });
        const seconds = bytes / BYTES_PER_SECOND;
        truth.audioSeconds = (truth.audioSeconds ?? 0) + seconds;
        send({ type: "conversation.item.input_audio_transcription.completed", item_id: itemId, content_index: 0, transcript: words.join(" "), usage: { type: "duration", seconds } });
      };
      ws.onMessage((data, isBinary) => {
        if (isBinary || dead) return;
        let msg: { type?: unknown; audio?: unknown } = {};
        try {
          msg = JSON.parse(String(data)) as typeof msg;
        } catch {
          send({ type: "error", error: { type: "invalid_request_error", code: "invalid_json", message: "invalid json", param: null } });
          return;
        }
        if (msg.type === "session.update") {
          session.updates.push(msg);
          send({ type: "session.updated", session: (msg as { session?: unknown }).session });
        }
        if (msg.type === "input_audio_buffer.append" && typeof msg.audio === "string") {
          if (script && ++appends >= script.afterAppends) {
            // A drop comes after what was already answered has left (as a vendor's socket dies between frames).
            if (script.how === "drop") {
              dead = true;
              void sent.then(() => ws.socket.terminate());
            } else send({ type: "error", error: { type: "server_error", code: "stub", message: "stub: the server had an error", param: null } });
            return;
          }
          const audio = Buffer.from(msg.audio, "base64");
          session.bytes += audio.length;
          if (this.silent) return;
          pending = Buffer.concat([pending, audio]);
          while (pending.length >= WORD_BYTES) {
            turn.push(`w${pending.readInt16LE(WORD_BYTES / 2)}`);
            session.words.push(turn.at(-1) as string);
            pending = pending.subarray(WORD_BYTES);
            if (turn.length < 2) continue;
            const itemId = `item_${++item}`;
            const end = turnFrom + turn.length * WORD_BYTES;
            send({ type: "input_audio_buffer.speech_started", item_id: itemId, audio_start_ms: ms(turnFrom) });
            send({ type: "input_audio_buffer.speech_stopped", item_id: itemId, audio_end_ms: ms(end) });
            send({ type: "input_audio_buffer.committed", item_id: itemId, previous_item_id: null });
            transcribe(itemId, turn, end - turnFrom);
            turn = [];
            turnFrom = end;
          }
        }
        if (msg.type === "input_audio_buffer.commit") {
          const bytes = session.bytes - turnFrom;
          if (bytes < WORD_BYTES) {
            send({ type: "error", error: { type: "invalid_request_error", code: "input_audio_buffer_commit_empty", message: "buffer too small", param: null } });
            return;
          }
          // What is left of a word (at least half of it) is heard too, as OpenAI hears the whole buffer.
          if (pending.length >= WORD_BYTES / 2) turn.push(`w${pending.readInt16LE(Math.floor(pending.length / 4) * 2)}`);
          const itemId = `item_${++item}`;
          send({ type: "input_audio_buffer.committed", item_id: itemId, previous_item_id: null });
          transcribe(itemId, turn, bytes);
          turn = [];
          turnFrom = session.bytes;
          pending = Buffer.alloc(0);
        }
      });
    });
  }

  override reset(): void {
    super.reset();
    this.failAtConnect = false;
    this.wordBytes = 4_800;
    this.silent = false;
    this.legs = [];
    this.sessions.length = 0;
  }
}
