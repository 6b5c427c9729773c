import { type Dispatcher, Pool } from "undici";

/** Why a send failed: retry (network, 408, 429, 5xx) or give up on this batch (other 4xx). */
export class SendError extends Error {
  override name = "SendError";
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status: number | null,
  ) {
    super(message);
  }
}

/**
 * POSTs JSON to one collector over an undici Pool (keep-alive connections to its origin).
 * The collector URL may carry a path prefix (https://host/voxgate): routes are joined under it.
 */
export class CollectorTransport {
  private readonly pool: Pool;
  private readonly prefix: string;
  private readonly origin: string;

  constructor(
    collectorUrl: string,
    private readonly apiKey: string | undefined,
    private readonly timeoutMs: number,
    connections = 4,
  ) {
    const url = new URL(collectorUrl);
    this.prefix = url.pathname.replace(/\/+$/, "");
    this.origin = url.origin;
    this.pool = new Pool(url.origin, { connections, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  /**
   * One request to a route under the URL's prefix, with the bearer key; the answer whatever its
   * status (its body a stream the caller reads or discards). Throws SendError when unreachable.
   */
  async request(method: "GET" | "POST", path: string, body?: unknown): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    try {
      return await this.pool.request({
        path: `${this.prefix}${path}`,
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        // Headers must come within the timeout; a long body (an export) may take longer between chunks only up to bodyTimeout.
        signal: method === "POST" ? AbortSignal.timeout(this.timeoutMs) : undefined,
      });
    } catch (err) {
      throw new SendError(`${this.origin} unreachable: ${(err as Error).message}`, true, null);
    }
  }

  async post(path: string, body: unknown): Promise<unknown> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.request("POST", path, body);
    } catch (err) {
      throw new SendError(`collector unreachable: ${(err as Error).message.replace(/^\S+ unreachable: /, "")}`, true, null);
    }
    const text = await res.body.text().catch(() => "");
    const status = res.statusCode;
    if (status >= 200 && status < 300) {
      try {
        return text ? JSON.parse(text) : null;
      } catch {
        return null;
      }
    }
    const retryable = status === 408 || status === 429 || status >= 500;
    throw new SendError(`collector answered ${status} on ${path}`, retryable, status);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
