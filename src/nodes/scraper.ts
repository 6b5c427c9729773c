import type { Pool } from "undici";
import type { Env } from "../config/env.js";
import { loadUndici } from "../http/undici.js";
import type { Config } from "../config/schema.js";
import type { Database, Db } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { Worker } from "../worker.js";
import { parseExposition } from "./prometheus.js";
import { insertNodeSamples, type NodeSampleInsert, pruneNodeSamples } from "./queries.js";
import { parseScrapeTargets, type ScrapeTarget } from "./targets.js";

/** Largest exposition body read from one target; a bigger one is a failed scrape (up 0). */
export const MAX_SCRAPE_BYTES = 4 * 1024 * 1024;
/** Per-request timeout bounds (connect, headers, body): the interval, kept within 1-10 s. */
const MIN_TIMEOUT_MS = 1000;
const MAX_TIMEOUT_MS = 10_000;
/** Samples older than this are pruned, about once an hour. */
export const NODE_SAMPLE_RETENTION_MS = 7 * 24 * 3600 * 1000;
const PRUNE_EVERY_MS = 3600 * 1000;
/** Floor of the cadence, whatever the config says: a tiny interval must not become a busy loop. */
const MIN_INTERVAL_MS = 100;

/**
 * Reads VOXGATE_NODE_SCRAPE_TARGETS and starts the scrape worker. Unset/empty: no worker, no
 * outbound request. `workers.enabled: false`: no worker either. Returns the worker it started.
 */
export interface NodeScraperDeps {
  env: Pick<Env, "VOXGATE_NODE_SCRAPE_TARGETS">;
  config: Pick<Config, "workers">;
  database: Database;
  log: Logger;
}

export function startNodeScraper(deps: NodeScraperDeps): Worker | null {
  const raw = deps.env.VOXGATE_NODE_SCRAPE_TARGETS;
  if (raw === undefined || raw.trim() === "") return null;
  const { log } = deps;
  const { targets, skipped } = parseScrapeTargets(raw);
  for (const s of skipped) {
    log.warn({ entry: s.position, reason: s.reason, value: s.display }, "node scrape target skipped");
  }
  log.info(
    { count: targets.length, skipped: skipped.length, targets: targets.map((t) => `${t.source}:${t.node}=${t.display}`) },
    `node scrape targets read: ${targets.length}`,
  );
  if (targets.length === 0) return null;
  if (!deps.config.workers.enabled) {
    log.info("workers.enabled is false: node scraping is off");
    return null;
  }
  const intervalMs = Math.max(MIN_INTERVAL_MS, deps.config.workers.node_scrape_interval_seconds * 1000);
  const scraper = new NodeScraper(deps.database.db, log, targets, intervalMs);
  scraper.start();
  return scraper;
}

/** Scrapes every target each interval (never overlapping ticks) and files samples per node. */
export class NodeScraper implements Worker {
  readonly name = "node-scraper";
  private readonly pools = new Map<string, Pool>();
  private readonly timeoutMs: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private lastPrune = 0;
  /** Last `up` per target, so a failing target logs once when it goes down, not every tick. */
  private readonly lastUp = new Map<ScrapeTarget, number>();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    readonly targets: ScrapeTarget[],
    private readonly intervalMs: number,
  ) {
    this.timeoutMs = Math.min(MAX_TIMEOUT_MS, Math.max(MIN_TIMEOUT_MS, intervalMs));
  }

  start(): void {
    this.schedule(0);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => {
        this.running = null;
        this.schedule(this.intervalMs);
      });
    }, delay);
    this.timer.unref();
  }

  /** One scrape of every target; all samples of a tick share its timestamp (one time axis per node). */
  async tick(): Promise<void> {
    const ts = new Date();
    const results = await Promise.all(this.targets.map((t) => this.scrape(t, ts)));
    const rows = results.flat();
    try {
      await insertNodeSamples(this.db, rows);
      if (ts.getTime() - this.lastPrune >= PRUNE_EVERY_MS) {
        this.lastPrune = ts.getTime();
        await pruneNodeSamples(this.db, new Date(ts.getTime() - NODE_SAMPLE_RETENTION_MS));
      }
    } catch (err) {
      this.log.error({ err: errorMessage(err) }, "node samples could not be stored");
    }
  }

  private async scrape(t: ScrapeTarget, ts: Date): Promise<NodeSampleInsert[]> {
    const base = { ts, node: t.node, source: t.source };
    const started = performance.now();
    try {
      const text = await this.fetchText(t);
      const { samples, truncated } = parseExposition(text, t.source);
      if (truncated) this.log.warn({ source: t.source, node: t.node }, "node scrape kept only the first series");
      this.markUp(t, 1);
      const seconds = (performance.now() - started) / 1000;
      return [
        ...samples.map((s) => ({ ...base, metric: s.metric, labels: s.labels, value: s.value })),
        { ...base, metric: "scrape_duration_seconds", labels: {}, value: Math.round(seconds * 1e6) / 1e6 },
        { ...base, metric: "up", labels: {}, value: 1 },
      ];
    } catch (err) {
      this.markUp(t, 0, errorMessage(err));
      return [{ ...base, metric: "up", labels: {}, value: 0 }];
    }
  }

  private markUp(t: ScrapeTarget, up: number, reason?: string): void {
    const before = this.lastUp.get(t);
    this.lastUp.set(t, up);
    if (before === up) return;
    const fields = { source: t.source, node: t.node, url: t.display };
    if (up === 0) this.log.warn({ ...fields, reason }, "node scrape target down");
    else if (before === 0) this.log.info(fields, "node scrape target up again");
  }

  /** GET with a pooled connection per origin, bounded time and size; redirects are failures. */
  private async fetchText(t: ScrapeTarget): Promise<string> {
    const pool = await this.poolFor(t.url.origin);
    const headers: Record<string, string> = { accept: "text/plain;version=0.0.4" };
    if (t.authorization) headers.authorization = t.authorization;
    const res = await pool.request({
      path: `${t.url.pathname}${t.url.search}`,
      method: "GET",
      headers,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`HTTP ${res.statusCode}${res.statusCode >= 300 && res.statusCode < 400 ? " (redirects are not followed)" : ""}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_SCRAPE_BYTES) {
        res.body.destroy();
        throw new Error(`exposition larger than ${MAX_SCRAPE_BYTES} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  private async poolFor(origin: string): Promise<Pool> {
    const { Pool } = await loadUndici();
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: 2,
        connectTimeout: this.timeoutMs,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.running) await this.running;
    await Promise.all([...this.pools.values()].map((p) => p.close().catch(() => {})));
    this.pools.clear();
  }
}

/** An error's message only: undici errors can carry request options, which hold the Authorization header. */
function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
