import type { Readable } from "node:stream";
import { DomainError, ERROR_CODE_LIST, type ErrorCode } from "../errors.js";
import { CollectorTransport, SendError } from "./transport.js";

/** A query: undefined values are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/** The server's error envelope as the DomainError it was on the server (same code, so the CLI's exit codes hold). */
async function refusal(status: number, body: Readable, path: string): Promise<DomainError> {
  let text = "";
  for await (const chunk of body) {
    if (text.length < 65_536) text += String(chunk);
  }
  try {
    const err = (JSON.parse(text) as { error?: { code?: string; message?: string; details?: unknown } }).error;
    if (err && ERROR_CODE_LIST.includes(err.code as ErrorCode)) return new DomainError(err.code as ErrorCode, err.message ?? `HTTP ${status}`, err.details);
  } catch {
    // not an envelope: described below
  }
  return new DomainError(status >= 500 ? "bad_gateway" : "bad_request", `${path} answered HTTP ${status}`);
}

/**
 * The operator's client of a running Voxgate server's API (what the remote CLI commands use): the
 * agent client's transport (one keep-alive pool, path prefix, bearer key), JSON in and out, and the
 * server's error envelope turned back into its DomainError.
 */
export class VoxgateApi {
  private readonly transport: CollectorTransport;

  constructor(
    readonly baseUrl: string,
    apiKey: string | undefined,
    timeoutMs = 60_000,
  ) {
    this.transport = new CollectorTransport(baseUrl, apiKey, timeoutMs, 1);
  }

  /** The answer's body as a stream, its headers, once the status is 2xx. */
  async open(method: "GET" | "POST", path: string, opts: { query?: Query; body?: unknown } = {}) {
    const target = withQuery(path, opts.query);
    let res: Awaited<ReturnType<CollectorTransport["request"]>>;
    try {
      res = await this.transport.request(method, target, opts.body);
    } catch (err) {
      throw new DomainError("unavailable", err instanceof SendError ? `cannot reach ${this.baseUrl}: ${err.message}` : String(err));
    }
    if (res.statusCode < 200 || res.statusCode >= 300) throw await refusal(res.statusCode, res.body, path);
    return { body: res.body, headers: res.headers, status: res.statusCode };
  }

  async json<T>(method: "GET" | "POST", path: string, opts: { query?: Query; body?: unknown } = {}): Promise<{ body: T; headers: Record<string, string | string[] | undefined> }> {
    const res = await this.open(method, path, opts);
    const text = await res.body.text();
    return { body: (text ? JSON.parse(text) : null) as T, headers: res.headers };
  }

  async get<T>(path: string, query?: Query): Promise<T> {
    return (await this.json<T>("GET", path, { query })).body;
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
