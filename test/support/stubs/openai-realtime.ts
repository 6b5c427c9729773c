import { StubServer, type WsContext } from "./vendor-stub.js";

/** The usage every stub response reports (the truth records are compared against). */
export const REALTIME_USAGE = {
  total_tokens: 330,
  input_tokens: 200,
  output_tokens: 130,
  input_token_details: { text_tokens: 40, audio_tokens: 160, image_tokens: 0, cached_tokens: 64, cached_tokens_details: { text_tokens: 0, audio_tokens: 64, image_tokens: 0 } },
  output_token_details: { text_tokens: 30, audio_tokens: 100 },
};

/**
 * OpenAI Realtime (GA) conversation: WS /v1/realtime?model=… answers session.created, echoes
 * session.update as session.updated, acknowledges input_audio_buffer.commit with
 * input_audio_buffer.committed, creates conversation items, and answers each response.create with
 * response.created (its metadata echoed, as LiveKit matches on it), an output item, audio, transcript
 * and text deltas, then response.done with REALTIME_USAGE. With `holdResponses` it never sends
 * response.done (a response in flight when the session ends).
 */
export class OpenAIRealtimeStub extends StubServer {
  holdResponses = false;
  /** The binary frames' bytes and text frames as received, for the unchanged-frames check. */
  readonly received: Array<string | Uint8Array> = [];
  private readonly sessions = new Set<WsContext["socket"]>();

  /** Ends every open session from the vendor's side (close 1000). */
  endSessions(): void {
    for (const s of this.sessions) s.close(1000, "session ended");
    this.sessions.clear();
  }

  constructor() {
    super();
    this.ws("/v1/realtime", (ws) => {
      this.sessions.add(ws.socket);
      ws.onClose(() => this.sessions.delete(ws.socket));
      let seq = 0;
      const id = (p: string) => `${p}_${++seq}`;
      const send = (o: object) => void ws.send(JSON.stringify({ event_id: id("event"), ...o }));
      send({ type: "session.created", session: { type: "realtime", object: "realtime.session", id: id("sess"), model: ws.req.query.get("model"), output_modalities: ["audio"] } });
      ws.onMessage((data, isBinary) => {
        this.received.push(isBinary ? (data as Uint8Array) : String(data));
        if (isBinary) return;
        let msg: { type?: unknown; session?: unknown; item?: { id?: unknown } | null; response?: { metadata?: unknown } | null } = {};
        try {
          msg = JSON.parse(String(data)) as typeof msg;
        } catch {
          send({ type: "error", error: { type: "invalid_request_error", code: "invalid_json", message: "invalid json" } });
          return;
        }
        if (msg.type === "session.update") send({ type: "session.updated", session: msg.session });
        if (msg.type === "input_audio_buffer.commit") send({ type: "input_audio_buffer.committed", item_id: id("item"), previous_item_id: null });
        if (msg.type === "conversation.item.create") {
          const item = { ...(msg.item ?? {}), id: typeof msg.item?.id === "string" ? msg.item.id : id("item"), object: "realtime.item", status: "completed" };
          send({ type: "conversation.item.created", previous_item_id: null, item });
          send({ type: "conversation.item.added", previous_item_id: null, item });
          send({ type: "conversation.item.done", previous_item_id: null, item });
        }
        if (msg.type === "response.create") {
          const responseId = id("resp");
          const itemId = id("item");
          const metadata = msg.response?.metadata ?? null;
          const response = { object: "realtime.response", id: responseId, status: "in_progress", output: [], metadata, usage: null };
          send({ type: "response.created", response });
          const item = { id: itemId, object: "realtime.item", type: "message", role: "assistant", status: "in_progress", content: [] };
          send({ type: "response.output_item.added", response_id: responseId, output_index: 0, item });
          send({ type: "conversation.item.created", previous_item_id: null, item });
          send({ type: "response.content_part.added", response_id: responseId, item_id: itemId, output_index: 0, content_index: 0, part: { type: "audio", transcript: "" } });
          send({ type: "response.output_audio.delta", response_id: responseId, item_id: itemId, output_index: 0, content_index: 0, delta: Buffer.alloc(4800, 1).toString("base64") });
          send({ type: "response.output_audio_transcript.delta", response_id: responseId, item_id: itemId, output_index: 0, content_index: 0, delta: "Hello" });
          if (this.holdResponses) return;
          send({ type: "response.output_audio.done", response_id: responseId, item_id: itemId, output_index: 0, content_index: 0 });
          send({ type: "response.output_audio_transcript.done", response_id: responseId, item_id: itemId, output_index: 0, content_index: 0, transcript: "Hello" });
          send({ type: "response.content_part.done", response_id: responseId, item_id: itemId, output_index: 0, content_index: 0, part: { type: "audio", transcript: "Hello" } });
          const doneItem = { ...item, status: "completed", content: [{ type: "output_audio", transcript: "Hello" }] };
          send({ type: "response.output_item.done", response_id: responseId, output_index: 0, item: doneItem });
          send({ type: "response.done", response: { ...response, status: "completed", output: [doneItem], usage: REALTIME_USAGE } });
        }
      });
    });
  }
}
