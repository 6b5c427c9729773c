import { pseudoAudio } from "./audio.js";
import { failLeg, type TtsLegScript } from "./tts-legs.js";
import { StubServer, type StubTruth } from "./vendor-stub.js";

export type { StubTruth };

function rawSeconds(bytes: number, q: URLSearchParams): number {
  const rate = Number(q.get("sample_rate") ?? "16000");
  const channels = Number(q.get("channels") ?? "1");
  const per = q.get("encoding") === "mulaw" ? rate * channels : rate * channels * 2;
  return bytes / per;
}

/** Audio a stub TTS answers for a text: 100 bytes per character, in 1 KiB chunks. */
export function ttsAudioFor(text: string, seed = 7): Uint8Array {
  return pseudoAudio(Math.max(1, [...text].length) * 100, seed);
}

export function chunked(bytes: Uint8Array, size = 1024): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

/**
 * Deepgram: POST /v1/listen (pre-recorded, raw audio body), WS /v1/listen (live: a `Results` per
 * audio frame, `Metadata` with the duration after `CloseStream`), POST /v1/speak, WS /v1/speak.
 */
export class DeepgramStub extends StubServer {
  /** Scripts its speak connections in order (a generation is the text up to a Flush); past the list: normal service. */
  speakLegs: TtsLegScript[] = [];

  constructor() {
    super();
    this.http("POST", "/v1/listen", async ({ req, answer }) => {
      const seconds = rawSeconds(req.body.length, req.query);
      this.truth.push({ path: req.path, audioSeconds: seconds, audioIn: req.body });
      const body = {
        metadata: { request_id: "dg-req-1", duration: seconds, channels: 1, models: [req.query.get("model") ?? "base"] },
        results: { channels: [{ alternatives: [{ transcript: "stub transcript", confidence: 0.99 }] }] },
      };
      await answer(200, { "content-type": "application/json", "dg-request-id": "dg-req-1" }, [JSON.stringify(body)]);
    });

    this.http("POST", "/v1/speak", async ({ req, answer }) => {
      let text = "";
      try {
        text = String((JSON.parse(Buffer.from(req.body).toString("utf8")) as { text?: unknown }).text ?? "");
      } catch {
        await answer(400, { "content-type": "application/json" }, [JSON.stringify({ err_code: "INVALID_JSON" })]);
        return;
      }
      const audio = ttsAudioFor(text);
      this.truth.push({ path: req.path, characters: [...text].length, audioOut: audio });
      await answer(200, { "content-type": "audio/mpeg" }, chunked(audio));
    });

    this.ws("/v1/listen", (ws) => {
      const truth: StubTruth = { path: ws.req.path, audioSeconds: 0 };
      this.truth.push(truth);
      let bytes = 0;
      ws.onMessage((data, isBinary) => {
        if (isBinary && typeof data !== "string") {
          const start = rawSeconds(bytes, ws.req.query);
          bytes += data.length;
          const end = rawSeconds(bytes, ws.req.query);
          truth.audioSeconds = end;
          // Deepgram's live shape as its SDKs (and LiveKit's plugin) read it: metadata.request_id, speech_final, confidence.
          const results = { type: "Results", start, duration: end - start, is_final: true, speech_final: false, metadata: { request_id: "dg-live-1" } };
          void ws.send(JSON.stringify({ ...results, channel: { alternatives: [{ transcript: `frame ${bytes}`, confidence: 0.99, words: [] }] } }));
          return;
        }
        let type: unknown = null;
        try {
          type = (JSON.parse(String(data)) as { type?: unknown }).type;
        } catch {
          ws.close(1008, "DATA-0000: bad message");
          return;
        }
        // Scripted failures for the gateway's in-band error tests: Deepgram's error frame, then close 1011.
        if (type === "Boom") {
          void ws.send(JSON.stringify({ type: "Error", description: "stub failure: no audio decoded", message: "NET-0001", variant: "stub" })).then(() => ws.close(1011, "NET-0001"));
          return;
        }
        // A vendor that keeps sending to a client that may not read: `bytes` of binary in 64 KiB frames.
        if (type === "Flood") {
          const total = Number((JSON.parse(String(data)) as { bytes?: unknown }).bytes ?? 0);
          const frame = Buffer.alloc(64 * 1024, 1);
          for (let sent = 0; sent < total && ws.socket.readyState === ws.socket.OPEN; sent += frame.length) ws.socket.send(frame);
          return;
        }
        if (type === "CloseStream") {
          void ws.send(JSON.stringify({ type: "Metadata", request_id: "dg-live-1", duration: rawSeconds(bytes, ws.req.query), channels: 1 })).then(() => ws.close(1000));
        }
      });
    });

    this.ws("/v1/speak", (ws) => {
      let pending = "";
      const truth: StubTruth = { path: ws.req.path, characters: 0 };
      this.truth.push(truth);
      const script = this.speakLegs.shift() ?? null;
      let flushes = 0;
      let failed = false;
      ws.onMessage((data) => {
        if (failed) return;
        let msg: { type?: unknown; text?: unknown } = {};
        try {
          msg = JSON.parse(String(data)) as typeof msg;
        } catch {
          return;
        }
        if (msg.type === "Speak" && typeof msg.text === "string") {
          pending += msg.text;
          truth.characters = (truth.characters ?? 0) + [...msg.text].length;
        }
        if (msg.type === "Flush") {
          const audio = ttsAudioFor(pending);
          const text = pending;
          pending = "";
          // The scripted failure of generation `at` (the text up to a Flush).
          if (script && flushes++ === script.at) {
            failed = true;
            const first = script.afterAudio ? ws.send(audio.subarray(0, 1024)) : Promise.resolve();
            // A generation the vendor failed before any audio is not billed.
            if (!script.afterAudio) truth.characters = (truth.characters ?? 0) - [...text].length;
            const error = JSON.stringify({ type: "Error", description: "stub: scripted vendor failure", message: "NET-0002", variant: "stub" });
            void first.then(() => failLeg(ws, script.how, error, { code: 1011, reason: "NET-0002" }));
            return;
          }
          void ws.send(audio).then(() => ws.send(JSON.stringify({ type: "Flushed", sequence_id: flushes - 1 })));
        }
        if (msg.type === "Close") ws.close(1000);
      });
    });
  }
}
