import { DeepgramClient } from "@deepgram/sdk";
import { wordFrame } from "../../support/stubs/deepgram-live.js";
import { type gatewayApp, OPERATOR_KEY, type RequestRowView, recordedRows } from "../support.js";

/** What the live failover tests share: a Deepgram SDK caller speaking scripted words, and the session's rows. */

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The session's rows once its last leg's final row (no checkpoint number) is recorded. */
export async function sessionRows(app: Awaited<ReturnType<typeof gatewayApp>>, session: string, legs: number): Promise<RequestRowView[]> {
  for (;;) {
    const rows = (await recordedRows(app)).filter((r) => r.session_id === session);
    if (rows.filter((r) => r.metadata?.checkpoint === undefined).length >= legs) return rows;
    await sleep(20);
  }
}

export const legSeconds = (rows: RequestRowView[], model: string) => rows.filter((r) => r.model_id === model).reduce((a, r) => a + Number(r.audio_seconds ?? 0), 0);

/**
 * Streams word frames through @deepgram/sdk's live client at a steady pace (at least `words`, and on
 * until `reached()` says the backup vendor has been reached, so the seam falls inside the call
 * whatever the machine's speed), then CloseStream; resolves at the stream's close.
 */
export async function talk(base: string, session: string, opts: { words: number; reached: () => boolean; model?: string }) {
  const dg = new DeepgramClient({ apiKey: OPERATOR_KEY, baseUrl: `${base.replace("http://", "ws://")}/p/calls/s/${session}/deepgram` });
  const socket = await dg.listen.v1.connect({ model: opts.model ?? "deepgram/nova-3", encoding: "linear16", sample_rate: 16000, interim_results: "true" });
  const finals: string[] = [];
  const starts: number[] = [];
  const metadata: Array<{ duration: number }> = [];
  let opens = 0;
  const closes: number[] = [];
  socket.on("open", () => opens++);
  socket.on("message", (m) => {
    if (m.type === "Metadata") metadata.push(m);
    if (m.type !== "Results" || !m.is_final) return;
    finals.push(m.channel.alternatives[0]?.transcript ?? "");
    starts.push(m.start);
  });
  socket.on("close", (e: { code: number }) => closes.push(e.code));
  socket.connect();
  await socket.waitForOpen();
  let sent = 0;
  while (sent < opts.words || !opts.reached()) {
    socket.sendMedia(wordFrame(sent++));
    await sleep(25);
  }
  socket.sendCloseStream({ type: "CloseStream" });
  // The vendor's normal close after CloseStream ends it (the SDK redials only after other codes).
  while (closes.length === 0) await sleep(10);
  return { finals, starts, metadata, opens, closes, words: Array.from({ length: sent }, (_, i) => `w${i}`).join(" ") };
}

/** The finals' words, in order, as one string (a final may hold several words). */
export const finalWords = (finals: string[]) => finals.join(" ").split(/\s+/).filter(Boolean).join(" ");
