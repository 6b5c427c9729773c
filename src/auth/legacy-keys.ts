import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * bcrypt for vk_ rows minted before key digests (the migration path): such a row is verified by
 * bcrypt once, then carries its digest. bcrypt is the one expensive step a wrong token could force,
 * so it is bounded: it runs on a worker thread (never on the event loop that serves valid keys),
 * one compare at a time, at most LEGACY_QUEUE_MAX waiting; a prefix is compared once at a time and,
 * after failed compares, not again for LEGACY_RETRY_MS, doubling with each further failure up to
 * LEGACY_RETRY_MAX_MS (a sustained flood on one prefix costs one compare per 30 s). Anything beyond
 * is refused unchecked.
 */
export const LEGACY_QUEUE_MAX = 16;
export const LEGACY_RETRY_MS = 1000;
export const LEGACY_RETRY_MAX_MS = 30_000;
const MAX_TRACKED_PREFIXES = 10_000;

export type LegacyCheck = "ok" | "wrong" | "throttled";

// The worker is plain CommonJS evaluated from a string, so it runs the same from src (tests) and dist.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const bcrypt = require(workerData.bcryptPath);
parentPort.on("message", (m) => {
  let ok = false;
  try { ok = bcrypt.compareSync(m.token, m.hash); } catch {}
  parentPort.postMessage({ id: m.id, ok });
});`;

const retryAfter = (failures: number) => Math.min(LEGACY_RETRY_MS * 2 ** (failures - 1), LEGACY_RETRY_MAX_MS);

interface Pending {
  resolve: (ok: boolean) => void;
  reject: (err: Error) => void;
}

export class LegacyKeyGate {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private readonly busyPrefixes = new Set<string>();
  private readonly failures = new Map<string, { at: number; count: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** True while a token for this prefix would be refused unchecked (callers skip the lookup then). */
  throttled(prefix: string): boolean {
    const f = this.failures.get(prefix);
    return this.busyPrefixes.has(prefix) || (f !== undefined && this.now() - f.at < retryAfter(f.count));
  }

  async check(token: string, prefix: string, hash: string): Promise<LegacyCheck> {
    if (this.throttled(prefix) || this.pending.size >= LEGACY_QUEUE_MAX) return "throttled";
    this.busyPrefixes.add(prefix);
    try {
      const ok = await this.compare(token, hash);
      if (ok) this.failures.delete(prefix);
      else {
        const f = this.failures.get(prefix);
        // A failure long after the last one starts the back-off again.
        const count = f && this.now() - f.at < 2 * LEGACY_RETRY_MAX_MS ? f.count + 1 : 1;
        if (this.failures.size >= MAX_TRACKED_PREFIXES) this.failures.clear();
        this.failures.set(prefix, { at: this.now(), count });
      }
      return ok ? "ok" : "wrong";
    } finally {
      this.busyPrefixes.delete(prefix);
    }
  }

  /** One compare on the worker thread (started on first use; it never keeps the process alive). */
  private compare(token: string, hash: string): Promise<boolean> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise<boolean>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, token, hash });
    });
  }

  private start(): Worker {
    const bcryptPath = createRequire(import.meta.url).resolve("bcryptjs");
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { bcryptPath } });
    worker.unref();
    worker.on("message", (m: { id: number; ok: boolean }) => {
      this.pending.get(m.id)?.resolve(m.ok);
      this.pending.delete(m.id);
    });
    const fail = (err: Error) => {
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.worker = null;
    };
    worker.on("error", fail);
    worker.on("exit", () => fail(new Error("bcrypt worker exited")));
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}
