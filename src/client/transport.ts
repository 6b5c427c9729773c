import { Pool } from "undici";

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

  constructor(
    collectorUrl: string,
    private readonly apiKey: string | undefined,
    private readonly timeoutMs: number,
    connections = 4,
  ) {
    const url = new URL(collectorUrl);
    this.prefix = url.pathname.replace(/\/+$/, "");
    this.pool = new Pool(url.origin, { connections, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  async post(path: string, body: unknown): Promise<unknown> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    let res: Awaited<ReturnType<Pool["request"]>>;
    try {
      res = await this.pool.request({
        path: `${this.prefix}${path}`,
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      throw new SendError(`collector unreachable: ${(err as Error).message}`, true, null);
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
