import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { GATEWAY_SECURITY_HEADERS } from "../http/security-headers.js";
import type { GatewayErrorCode, VendorProtocol } from "./protocol.js";

/**
 * An answer's headers as node's flat list (name, value, name, value, …), which writeHead takes as
 * is: no per-call object of ~20 keys built and then walked again by node.
 */
export type HeaderList = (string | string[])[];

/**
 * The client side of one gateway call: node's request and response of the gateway listener
 * (src/gateway/listener.ts), written straight to the socket (no web streams on the hot path).
 */
export interface Outbound {
  /** Sends status and headers (name, value, … without repeated names), once. */
  head(status: number, headers: HeaderList): void;
  /** Writes a body chunk; false when the client is slow (await drained()). */
  write(chunk: Buffer): boolean;
  drained(): Promise<void>;
  /** Ends the answer. `broken`: the body is incomplete (the connection is cut so the client sees it). */
  end(broken?: boolean): void;
  /** The client went away before the answer ended. */
  readonly aborted: boolean;
  /** `target.abort()` is called if the client goes away before the answer ended (an object, not a closure per call). */
  onAbort(target: { abort(): void }): void;
  /** The client's address (null when the socket no longer knows it). */
  readonly remoteAddress: string | null;
}

export class NodeOutbound implements Outbound {
  aborted = false;
  private readonly abortTargets: { abort(): void }[] = [];
  constructor(
    private readonly res: ServerResponse,
    req: IncomingMessage,
  ) {
    res.once("close", () => {
      if (res.writableFinished) return;
      this.aborted = true;
      for (const t of this.abortTargets) t.abort();
    });
    this.remoteAddress = req.socket.remoteAddress ?? null;
  }
  readonly remoteAddress: string | null;
  head(status: number, headers: HeaderList): void {
    this.res.writeHead(status, headers);
  }
  write(chunk: Buffer): boolean {
    return this.res.write(chunk);
  }
  drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      this.res.once("drain", done);
      this.res.once("close", done);
    });
  }
  end(broken = false): void {
    if (broken) this.res.destroy();
    else this.res.end();
  }
  onAbort(target: { abort(): void }): void {
    this.abortTargets.push(target);
  }
}

export class BodyTooLarge extends Error {}

/**
 * A node request's body up to `limit` bytes (BodyTooLarge beyond, the rest left unread as with an
 * async iterator that stopped). Listeners, not `for await`: no async iterator and promise per chunk.
 * A body node has already buffered whole (the usual case: it came in the headers' packet) is taken
 * from the stream's buffer at once, without the listeners and the stream's ticks (≈ 9 µs of a
 * call's ≈ 32 µs before the upstream dispatch at c=1, 2026-11-24).
 */
export function readIncoming(incoming: IncomingMessage, limit: number): Buffer | Promise<Buffer> {
  const declared = Number(incoming.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new BodyTooLarge());
  if (isWhole(incoming, declared)) return takeWhole(incoming);
  // Read from the request listener itself (a static key is checked at once), the body of the head's
  // packet is not pushed yet: node emits the request before its parser goes on (src/http/server-limits.ts).
  // Looked at once that parse is over, it is whole: no listeners, 'data' and 'end' for it.
  if (declared > 0 && incoming.readableLength === 0 && !incoming.complete && incoming.readableFlowing === null) {
    return new Promise<Buffer>((resolve, reject) => {
      process.nextTick(() => {
        if (isWhole(incoming, declared)) resolve(takeWhole(incoming));
        else readByListeners(incoming, limit).then(resolve, reject);
      });
    });
  }
  return readByListeners(incoming, limit);
}

/** Node's parser never buffers more than Content-Length (`complete` is set a tick later). */
function isWhole(incoming: IncomingMessage, declared: number): boolean {
  return declared === incoming.readableLength && !incoming.destroyed && !incoming.readableEnded && incoming.readableFlowing !== true;
}

function takeWhole(incoming: IncomingMessage): Buffer {
  // read() of a paused stream returns everything buffered as one Buffer (null when empty).
  const body = (incoming.read() as Buffer | null) ?? Buffer.alloc(0);
  // The end of the message is parsed after this: flowing, the request still emits 'end' and
  // 'close' (then destroyed), as when read by listeners; paused, it never would.
  incoming.resume();
  return body;
}

function readByListeners(incoming: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err: Error | null) => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      incoming.off("close", onClose);
      if (err) {
        incoming.pause();
        reject(err);
      } else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) done(new BodyTooLarge());
      else chunks.push(chunk);
    };
    const onEnd = () => done(null);
    const onError = (err: Error) => done(err);
    // Closed before the end (the client went away): what an async iterator reports as premature close.
    const onClose = () => done(Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" }));
    if (incoming.readableEnded) return resolve(Buffer.alloc(0));
    // Gone before this look (its 'close' may be past): as when it goes while being read.
    if (incoming.destroyed) return onClose();
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onError);
    incoming.on("close", onClose);
  });
}

/** Upstream answer headers that are the connection's, not the answer's, or that must not reach the caller. */
const DROPPED_UPSTREAM = new Set(["connection", "keep-alive", "transfer-encoding", "set-cookie", "proxy-authenticate", "trailer", "upgrade"]);

/** GATEWAY_SECURITY_HEADERS as names and values in a row, read once: every answer appends them as they are. */
const SECURITY_LIST: readonly string[] = Object.entries(GATEWAY_SECURITY_HEADERS).flat();
const SECURITY = new Set(Object.keys(GATEWAY_SECURITY_HEADERS));
const isSecurityName = (name: string) => SECURITY.has(name);

/**
 * An answer's headers: the given ones (`drop`: names left out), then Voxgate's (`extra`, then the
 * request id), then GATEWAY_SECURITY_HEADERS. A later group wins over an earlier one for the same
 * name, the name keeping its first position: the same names, values and order as assigning the
 * three groups into one object in turn, which is what a clash (rare) does; otherwise every group's
 * names are new and are appended as they come.
 */
export function answerHeaders(base: Readonly<Record<string, string | string[] | undefined>>, extra: Readonly<Record<string, string>>, requestId: string, drop?: ReadonlySet<string>): HeaderList {
  const out: HeaderList = [];
  for (const name in base) {
    const v = base[name];
    if (v === undefined || drop?.has(name)) continue;
    if (isSecurityName(name) || name === "x-voxgate-request-id" || Object.hasOwn(extra, name)) return mergedHeaders(base, extra, requestId, drop);
    out.push(name, v);
  }
  for (const name in extra) {
    if (isSecurityName(name)) return mergedHeaders(base, extra, requestId, drop);
    if (name !== "x-voxgate-request-id") out.push(name, extra[name] as string);
  }
  out.push("x-voxgate-request-id", requestId);
  for (let i = 0; i < SECURITY_LIST.length; i++) out.push(SECURITY_LIST[i] as string);
  return out;
}

/** answerHeaders when a name is in two groups: the groups assigned into one object in turn. */
function mergedHeaders(base: Readonly<Record<string, string | string[] | undefined>>, extra: Readonly<Record<string, string>>, requestId: string, drop?: ReadonlySet<string>): HeaderList {
  const merged: Record<string, string | string[]> = {};
  for (const name in base) {
    const v = base[name];
    if (v !== undefined && !drop?.has(name)) merged[name] = v;
  }
  Object.assign(merged, extra, { "x-voxgate-request-id": requestId });
  for (let i = 0; i < SECURITY_LIST.length; i += 2) merged[SECURITY_LIST[i] as string] = SECURITY_LIST[i + 1] as string;
  const out: HeaderList = [];
  for (const name in merged) out.push(name, merged[name] as string | string[]);
  return out;
}

/** The upstream answer's headers as relayed to the caller (connection headers and cookies dropped). */
export function relayHeaders(upstream: IncomingHttpHeaders, extra: Readonly<Record<string, string>>, requestId: string): HeaderList {
  return answerHeaders(upstream, extra, requestId, DROPPED_UPSTREAM);
}

/** Sends a gateway error in the vendor's own error shape; the returned value is ignored. */
export function answerError(
  out: Outbound,
  protocol: VendorProtocol,
  status: number,
  code: GatewayErrorCode,
  message: string,
  requestId: string,
  extra: Record<string, string> = {},
  details?: unknown,
): undefined {
  const e = protocol.errorBody(status, code, message, details);
  const body = Buffer.from(e.body);
  out.head(status, answerHeaders({ "content-type": e.contentType, "content-length": String(body.byteLength) }, extra, requestId));
  out.write(body);
  out.end();
  return undefined;
}
