import { StubServer } from "./vendor-stub.js";

/** The session time the stub reports in Termination (what AssemblyAI bills), beside the audio's own seconds. */
export const ASSEMBLYAI_SESSION_SECONDS = 7.5;

/**
 * AssemblyAI Universal-Streaming v3: WS /v3/ws. `Begin` on connect, a `Turn` per 3,200 bytes of audio
 * (100 ms of 16 kHz PCM), and on `{"type":"Terminate"}` a `Termination` with the audio's seconds
 * (from the bytes and the `sample_rate` query) and the session's, then close 1000.
 */
export class AssemblyAIStub extends StubServer {
  constructor() {
    super();
    this.ws("/v3/ws", (ws) => {
      const rate = Number(ws.req.query.get("sample_rate") ?? 16000);
      let bytes = 0;
      let turn = 0;
      this.truth.push({ path: ws.req.path, audioSeconds: 0 });
      const truth = this.truth[this.truth.length - 1];
      void ws.send(JSON.stringify({ type: "Begin", id: "sess-1", expires_at: 1_900_000_000 }));
      ws.onMessage((data, isBinary) => {
        if (isBinary) {
          bytes += (data as Uint8Array).length;
          if (truth) truth.audioSeconds = bytes / (rate * 2);
          void ws.send(
            JSON.stringify({ type: "Turn", turn_order: turn++, turn_is_formatted: false, end_of_turn: false, transcript: "hello", end_of_turn_confidence: 0.5, words: [] }),
          );
          return;
        }
        const msg = JSON.parse(String(data)) as { type?: string };
        if (msg.type === "Terminate") {
          void ws
            .send(JSON.stringify({ type: "Termination", audio_duration_seconds: bytes / (rate * 2), session_duration_seconds: ASSEMBLYAI_SESSION_SECONDS }))
            .then(() => ws.close(1000));
        }
      });
    });
  }
}
