import { wavSeconds } from "../../../src/gateway/audio/stt-units.js";
import { chunked, type StubTruth, ttsAudioFor } from "./deepgram.js";
import { StubServer } from "./vendor-stub.js";

/**
 * OpenAI audio: POST /v1/audio/transcriptions (multipart; JSON with `usage.seconds` timed from the
 * WAV, or plain text for response_format=text), POST /v1/audio/speech (streamed audio for `input`),
 * WS /v1/realtime?intent=transcription (a delta and a completion with `usage.seconds` per commit).
 */
export class OpenAIAudioStub extends StubServer {
  constructor() {
    super();
    this.http("POST", "/v1/audio/transcriptions", async ({ req, answer }) => {
      let form: FormData;
      try {
        form = await new Request("http://stub/", { method: "POST", headers: req.headers, body: Buffer.from(req.body) }).formData();
      } catch {
        await answer(400, { "content-type": "application/json" }, [JSON.stringify({ error: { message: "bad multipart" } })]);
        return;
      }
      const file = form.get("file");
      if (!(file instanceof Blob)) {
        await answer(400, { "content-type": "application/json" }, [JSON.stringify({ error: { message: "file missing" } })]);
        return;
      }
      const audioIn = new Uint8Array(await file.arrayBuffer());
      const seconds = wavSeconds(audioIn) ?? 0;
      this.truth.push({ path: req.path, audioSeconds: seconds, audioIn });
      const format = form.get("response_format");
      if (format === "text") {
        await answer(200, { "content-type": "text/plain" }, ["stub transcript\n"]);
        return;
      }
      // gpt-4o(-mini)-transcribe report token usage (10 audio tokens a second here), whisper-1 seconds.
      const tokens = String(form.get("model") ?? "").includes("transcribe");
      const audioTokens = Math.round(seconds * 10);
      const usage = tokens
        ? { type: "tokens", input_tokens: audioTokens, output_tokens: 4, total_tokens: audioTokens + 4, input_token_details: { text_tokens: 0, audio_tokens: audioTokens } }
        : { type: "duration", seconds };
      const body = format === "verbose_json" ? { text: "stub transcript", duration: seconds, language: "english" } : { text: "stub transcript", usage };
      await answer(200, { "content-type": "application/json" }, [JSON.stringify(body)]);
    });

    this.http("POST", "/v1/audio/speech", async ({ req, answer }) => {
      let input = "";
      try {
        input = String((JSON.parse(Buffer.from(req.body).toString("utf8")) as { input?: unknown }).input ?? "");
      } catch {
        await answer(400, { "content-type": "application/json" }, [JSON.stringify({ error: { message: "bad json" } })]);
        return;
      }
      const audio = ttsAudioFor(input);
      this.truth.push({ path: req.path, characters: [...input].length, audioOut: audio });
      await answer(200, { "content-type": "audio/mpeg" }, chunked(audio));
    });

    this.ws("/v1/realtime", (ws) => {
      const truth: StubTruth = { path: ws.req.path, audioSeconds: 0 };
      this.truth.push(truth);
      let pending = 0;
      let item = 0;
      void ws.send(JSON.stringify({ type: "transcription_session.created", session: { input_audio_format: "pcm16" } }));
      ws.onMessage((data) => {
        let msg: { type?: unknown; audio?: unknown } = {};
        try {
          msg = JSON.parse(String(data)) as typeof msg;
        } catch {
          void ws.send(JSON.stringify({ type: "error", error: { message: "invalid json" } }));
          return;
        }
        if (msg.type === "stub.fail") {
          void ws.send(JSON.stringify({ type: "error", event_id: "event_stub", error: { type: "server_error", code: "stub", message: "stub transcription failed", param: null } }));
          return;
        }
        if (msg.type === "input_audio_buffer.append" && typeof msg.audio === "string") pending += Buffer.from(msg.audio, "base64").length;
        if (msg.type === "input_audio_buffer.commit") {
          const seconds = pending / 48_000;
          pending = 0;
          truth.audioSeconds = (truth.audioSeconds ?? 0) + seconds;
          const itemId = `item_${++item}`;
          void ws
            .send(JSON.stringify({ type: "conversation.item.input_audio_transcription.delta", item_id: itemId, delta: "stub" }))
            .then(() => ws.send(JSON.stringify({ type: "conversation.item.input_audio_transcription.completed", item_id: itemId, transcript: "stub", usage: { type: "duration", seconds } })));
        }
      });
    });
  }
}
