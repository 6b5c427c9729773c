import { type StubScript, StubServer, type StubTruth } from "./vendor-stub.js";

/**
 * How one connection of the scripted Deepgram live vendor fails: after `afterFrames` audio frames
 * received it drops the TCP connection (`drop`, the client sees 1006), closes 1011 NET-0001
 * (`close`), stops answering while it keeps reading (`stall`), or answers Deepgram's error frame and
 * closes 1011 (`error`; `afterFrames: 0` is the quota-after-connect case: at the upgrade).
 */
export interface LiveLegScript {
  how: "drop" | "close" | "stall" | "error";
  afterFrames: number;
}

/** 100 ms of 16 kHz linear16 whose samples all hold `word` (the scripted vendor hears it as "w<word>"). */
export function wordFrame(word: number, bytes = 3_200): Buffer {
  const b = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i += 2) b.writeInt16LE(word, i);
  return b;
}

/** The word a frame of wordFrame() carries. */
const wordOf = (frame: Uint8Array) => `w${Buffer.from(frame).readInt16LE(0)}`;

/**
 * A Deepgram live `listen` vendor whose transcript is scripted by the audio itself: each frame of
 * wordFrame(n) is heard as the word `w<n>`; every frame gets an interim `Results`, every second
 * frame a final covering the pair (the rest at CloseStream), timed on the connection's own audio.
 * `legs` scripts its connections in order (one entry each; a connection past the list serves
 * normally). `truth` holds, per connection, the audio seconds it received. For the gateway's live
 * failover tests and benchmarks; `answerDelayMs` holds every answer (a vendor answering in fixed time).
 */
export class DeepgramLiveStub extends StubServer {
  legs: LiveLegScript[] = [];
  answerDelayMs = 0;
  /** Connections opened, in order, and whether each failed by its script. */
  readonly connections: Array<{ failed: boolean }> = [];

  constructor() {
    super();
    this.ws("/v1/listen", (ws) => {
      const rate = Number(ws.req.query.get("sample_rate") ?? "16000") * 2;
      const script = this.legs.shift() ?? null;
      const conn = { failed: false };
      this.connections.push(conn);
      const truth: StubTruth = { path: ws.req.path, audioSeconds: 0 };
      this.truth.push(truth);
      let bytes = 0;
      let frames = 0;
      let pair: { start: number; words: string[] } | null = null;
      let dead = false;
      const answer = (msg: object) => {
        if (dead || conn.failed) return;
        const text = JSON.stringify(msg);
        if (this.answerDelayMs > 0) setTimeout(() => void ws.send(text), this.answerDelayMs);
        else void ws.send(text);
      };
      const results = (start: number, end: number, words: string[], isFinal: boolean) =>
        answer({
          type: "Results",
          channel_index: [0, 1],
          start,
          duration: end - start,
          is_final: isFinal,
          speech_final: isFinal,
          metadata: { request_id: `dg-live-${this.connections.length}`, model_info: { name: "stub", version: "", arch: "" }, model_uuid: "" },
          channel: { alternatives: [{ transcript: words.join(" "), confidence: 0.99, words: [] }] },
        });
      const fail = () => {
        conn.failed = true;
        if (!script) return;
        if (script.how === "drop") {
          dead = true;
          ws.socket.terminate();
        } else if (script.how === "close") ws.close(1011, "NET-0001");
        else if (script.how === "error") {
          void ws.send(JSON.stringify({ type: "Error", description: "stub: project quota exceeded", message: "INSUFFICIENT_PERMISSIONS", variant: "stub" })).then(() => ws.close(1011, "NET-0001"));
        }
        // stall: keeps reading, answers nothing more
      };
      if (script?.afterFrames === 0) fail();
      ws.onMessage((data, isBinary) => {
        if (dead) return;
        if (isBinary && typeof data !== "string") {
          const start = bytes / rate;
          bytes += data.length;
          frames++;
          truth.audioSeconds = bytes / rate;
          if (script && !conn.failed && frames >= script.afterFrames) {
            fail();
            if (script.how !== "stall") return;
          }
          const end = bytes / rate;
          const word = wordOf(data);
          pair ??= { start, words: [] };
          pair.words.push(word);
          results(start, end, [word], false);
          if (pair.words.length === 2) {
            results(pair.start, end, pair.words, true);
            pair = null;
          }
          return;
        }
        // A stalled vendor answers nothing, its CloseStream included.
        if (String(data).includes("CloseStream") && !conn.failed) {
          if (pair) results(pair.start, bytes / rate, pair.words, true);
          pair = null;
          const done = () => void ws.send(JSON.stringify({ type: "Metadata", request_id: "dg-live", duration: bytes / rate, channels: 1 })).then(() => ws.close(1000));
          if (this.answerDelayMs > 0) setTimeout(done, this.answerDelayMs + 1);
          else done();
        }
      });
    });
  }

  override reset(script: Partial<StubScript> = {}): void {
    super.reset(script);
    this.legs = [];
    this.answerDelayMs = 0;
    this.connections.length = 0;
  }
}
