import type { WebSocket } from "ws";
import type { UpstreamTarget } from "../protocol.js";
import { connectChain, planFor, recordRefused, relayCall, type WsCall } from "./call.js";
import type { StreamSession } from "./session.js";
import { BUDGET_ENDED, openStreamBudget } from "./stream-budget.js";
import { CLOSE_BUDGET } from "./streams.js";

/** Close code when the vendor's socket could not be opened for the model a message named. */
const CLOSE_NO_UPSTREAM = 1011;

/**
 * An accepted stream whose vendor names the model only inside messages (Cartesia's per-generation
 * `model_id`, OpenAI realtime `session.update`): client frames are held until one names a model —
 * or asks for work (audio) before any is named, when the project's default_stack applies — then the
 * vendor's socket is opened for it and the held frames go first, through the route's gate. A frame
 * naming a model the stream cannot serve is answered in-band with the vendor's own error, not
 * forwarded, and recorded as a refused attempt; the client may name another. Held frames are bounded
 * by gateway.streams.max_buffered_bytes (over it: the vendor's error, then close 1013).
 */
export function awaitModel(call: WsCall, session: StreamSession): void {
  const inBand = call.route.inBand;
  if (!inBand) throw new Error("awaitModel needs a route that names its model in messages");
  const client: WebSocket = session.client;
  const held: Array<{ frame: Buffer; isBinary: boolean }> = [];
  let heldBytes = 0;
  let connecting = false;
  const max = call.gw.streams.limits.maxBufferedBytes;

  const onFrame = (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    const frame = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (connecting) {
      hold(frame, isBinary);
      return;
    }
    const text = isBinary ? null : frame.toString("utf8");
    const named = text === null ? null : inBand.named(text);
    if (named === null && !inBand.work(frame, isBinary)) {
      hold(frame, isBinary);
      return;
    }
    const plan = planFor(call, named);
    if (!plan.ok) {
      // The project's budget refusal is recorded by planCall; an unservable model is recorded here.
      session.sendToClient(inBand.error(text, plan.code, plan.message));
      if (plan.code !== "budget_exceeded") recordRefused(call, named ?? "(default_stack)", plan.message);
      return;
    }
    hold(frame, isBinary);
    connecting = true;
    void open(plan, text);
  };

  const hold = (frame: Buffer, isBinary: boolean) => {
    held.push({ frame, isBinary });
    heldBytes += frame.length;
    if (heldBytes > max) {
      session.sendToClient(inBand.error(null, "payload_too_large", "too much was sent before any model was named"));
      session.end(1013, "relay buffer full: no model named");
    }
  };

  const open = async (plan: Extract<ReturnType<typeof planFor>, { ok: true }>, text: string | null) => {
    // Nothing more is read from the client while its vendor socket opens (TCP holds the rest).
    client.pause();
    const budget = await openStreamBudget(call, plan.chain[0] as UpstreamTarget, plan.ctx);
    if (budget === "refused") {
      client.off("message", onFrame);
      session.fail(BUDGET_ENDED);
      session.sendToClient(inBand.error(text, "budget_exceeded", `project ${call.caller.attribution.project} has reached its daily budget`));
      session.end(CLOSE_BUDGET.code, CLOSE_BUDGET.reason);
      return;
    }
    const opened = await connectChain(call, plan);
    if (client.readyState !== client.OPEN) {
      budget?.release();
      if (opened.ok) {
        opened.upstream.terminate();
        opened.grant.release();
      }
      return;
    }
    client.off("message", onFrame);
    if (!opened.ok) {
      budget?.release();
      session.sendToClient(inBand.error(text, opened.refusal.code, opened.refusal.message));
      session.end(CLOSE_NO_UPSTREAM, "upstream unavailable");
      return;
    }
    relayCall(call, session, opened.upstream, plan, opened, held, budget);
    client.resume();
  };

  client.on("message", onFrame);
}
