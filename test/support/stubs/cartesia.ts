import { chunked, type StubTruth, ttsAudioFor } from "./deepgram.js";
import { failLeg, type TtsLegScript } from "./tts-legs.js";
import { StubServer } from "./vendor-stub.js";

function parseJson(bytes: Uint8Array | string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("utf8"));
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A scripted Cartesia tts/websocket connection: a generation is one request with a `transcript`. */
export type CartesiaLegScript = TtsLegScript;

/**
 * Cartesia: POST /tts/bytes (audio for `transcript`), POST /tts/sse (base64 chunks as events) and WS /tts/websocket (key in the query
 * `api_key` or header `X-API-Key`): a `chunk` per generation request, `done` when `continue` is false.
 */
export class CartesiaStub extends StubServer {
  /** Scripts its tts/websocket connections in order (one entry each; a connection past the list serves normally). */
  legs: CartesiaLegScript[] = [];

  constructor() {
    super();
    this.http("POST", "/tts/bytes", async ({ req, answer }) => {
      const body = parseJson(req.body);
      if (!body || typeof body.transcript !== "string") {
        await answer(400, { "content-type": "application/json" }, [JSON.stringify({ error: "invalid request" })]);
        return;
      }
      const audio = ttsAudioFor(body.transcript);
      this.truth.push({ path: req.path, characters: [...body.transcript].length, audioOut: audio });
      await answer(200, { "content-type": "audio/wav" }, chunked(audio));
    });

    // SSE: a `chunk` event per audio piece, then `done` (the SDK reads the data JSON, not the event line).
    this.http("POST", "/tts/sse", async ({ req, answer }) => {
      const body = parseJson(req.body);
      if (!body || typeof body.transcript !== "string") {
        await answer(400, { "content-type": "application/json" }, [JSON.stringify({ error_code: "invalid_request", title: "Invalid request", message: "transcript is required", request_id: "r-1" })]);
        return;
      }
      const audio = ttsAudioFor(body.transcript);
      this.truth.push({ path: req.path, characters: [...body.transcript].length, audioOut: audio });
      const events = chunked(audio).map(
        (c) => `event: chunk\ndata: ${JSON.stringify({ type: "chunk", data: Buffer.from(c).toString("base64"), done: false, status_code: 206, step_time: 1 })}\n\n`,
      );
      events.push(`event: done\ndata: ${JSON.stringify({ type: "done", done: true, status_code: 200 })}\n\n`);
      await answer(200, { "content-type": "text/event-stream" }, events);
    });

    this.ws("/tts/websocket", (ws) => {
      const truth: StubTruth = { path: ws.req.path, characters: 0 };
      this.truth.push(truth);
      const script = this.legs.shift() ?? null;
      let requests = 0;
      let failed = false;
      ws.onMessage((data) => {
        if (failed) return;
        const msg = parseJson(data);
        if (!msg) {
          void ws.send(JSON.stringify({ type: "error", error: "invalid json", done: true }));
          return;
        }
        const contextId = typeof msg.context_id === "string" ? msg.context_id : "";
        if (msg.cancel === true) return;
        if (script && typeof msg.transcript === "string" && requests++ === script.at) {
          failed = script.how !== "refuse";
          if (script.how === "refuse") {
            void ws.send(JSON.stringify({ type: "error", context_id: contextId, status_code: 400, done: true, title: "Invalid request", message: "stub: voice not found" }));
            return;
          }
          const audio = script.afterAudio
            ? ws.send(JSON.stringify({ type: "chunk", data: Buffer.from(ttsAudioFor(msg.transcript)).toString("base64"), done: false, status_code: 206, step_time: 1, context_id: contextId }))
            : Promise.resolve();
          if (script.afterAudio) truth.characters = (truth.characters ?? 0) + [...msg.transcript].length;
          void audio.then(() =>
            failLeg(ws, script.how, JSON.stringify({ type: "error", context_id: contextId, status_code: 500, done: true, title: "Internal error", message: "stub: scripted vendor failure" })),
          );
          return;
        }
        // A transcript containing FAIL is a generation the vendor fails before any audio.
        if (typeof msg.transcript === "string" && msg.transcript.includes("FAIL")) {
          void ws.send(JSON.stringify({ type: "error", context_id: contextId, status_code: 500, done: true, title: "Internal error", message: "stub generation failed" }));
          return;
        }
        if (typeof msg.transcript === "string") {
          truth.characters = (truth.characters ?? 0) + [...msg.transcript].length;
          const data64 = Buffer.from(ttsAudioFor(msg.transcript)).toString("base64");
          void ws.send(JSON.stringify({ type: "chunk", data: data64, done: false, status_code: 206, step_time: 1, context_id: contextId })).then(() => {
            if (msg.continue !== true) return ws.send(JSON.stringify({ type: "done", done: true, status_code: 200, context_id: contextId }));
          });
        }
      });
    });
  }
}
