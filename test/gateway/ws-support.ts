import { WebSocket } from "ws";
import type { TestApp } from "../support/app.js";
import { type RequestRowView, recordedRows } from "./support.js";

export interface OpenSocket {
  ws: WebSocket;
  /** Headers of the 101 answer (X-Voxgate-Request-Id). */
  headers: Record<string, string | string[] | undefined>;
  /** Every message received, in order (text as string, binary as Buffer). */
  received: Array<string | Buffer>;
  closed: Promise<{ code: number; reason: string }>;
}

export interface Refused {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

/** Opens a client WebSocket; resolves when open, or with the HTTP refusal of the upgrade. */
export function openWs(url: string, opts: { headers?: Record<string, string>; protocols?: string[] } = {}): Promise<OpenSocket | Refused> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts.protocols ?? [], { headers: opts.headers, perMessageDeflate: false });
    const received: Array<string | Buffer> = [];
    let headers: Record<string, string | string[] | undefined> = {};
    ws.on("upgrade", (res) => {
      headers = res.headers;
    });
    ws.on("message", (data, isBinary) => received.push(isBinary ? (data as Buffer) : data.toString()));
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.once("close", (code, reason) => r({ code, reason: reason.toString() })));
    ws.once("open", () => resolve({ ws, headers, received, closed }));
    ws.once("unexpected-response", (_req, res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
    });
    ws.once("error", reject);
  });
}

export function opened(s: OpenSocket | Refused): OpenSocket {
  if ("ws" in s) return s;
  throw new Error(`upgrade refused with ${s.status} ${String(s.headers["x-voxgate-error"])}`);
}

export function refused(s: OpenSocket | Refused): Refused {
  if ("status" in s) return s;
  s.ws.terminate();
  throw new Error("upgrade was accepted");
}

/** Resolves with the first received message matching `pred` (waits for it). */
export async function waitFor(s: OpenSocket, pred: (m: string | Buffer) => boolean): Promise<string | Buffer> {
  for (;;) {
    const hit = s.received.find(pred);
    if (hit !== undefined) return hit;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The rows of one stream: its final row (the request id) and its checkpoint rows. */
export async function streamRows(app: TestApp, requestId: string): Promise<RequestRowView[]> {
  const rows = await recordedRows(app);
  return rows.filter((r) => r.id === requestId || r.metadata?.stream_id === requestId);
}

export const sum = (rows: RequestRowView[], pick: (r: RequestRowView) => number | string | null) => rows.reduce((a, r) => a + Number(pick(r) ?? 0), 0);

/** Waits until the stream's final row (its request id) is recorded, then returns all its rows. */
export async function settledStream(app: TestApp, requestId: string): Promise<RequestRowView[]> {
  for (;;) {
    const rows = await streamRows(app, requestId);
    if (rows.some((r) => r.id === requestId)) return rows;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A session's rows once each of `models` has recorded one (the legs of a stream that failed over). */
export async function legRows(app: TestApp, session: string, models: string[]): Promise<RequestRowView[]> {
  for (;;) {
    const rows = (await recordedRows(app)).filter((r) => r.session_id === session);
    if (models.every((m) => rows.some((r) => r.model_id === m))) return rows;
    await new Promise((r) => setTimeout(r, 20));
  }
}
