import type { Config } from "../config/schema.js";
import type { Database } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { Worker } from "../worker.js";
import { applyRetention } from "./apply.js";
import { retentionHorizons } from "./horizons.js";

/**
 * First run ten minutes after start, then every interval: not during start-up (migrations, warm-up),
 * and a replica restarted more often than the interval (a rolling deploy) still gets its turns.
 */
const FIRST_RUN_DELAY_MS = 10 * 60_000;

/**
 * Applies retention every `retention.interval_minutes` (one replica at a time: the advisory lock of
 * applyRetention; the others skip the turn). `workers.enabled: false` turns it off, as every worker.
 * Stopping aborts a run between batches and waits for it.
 */
export function startRetentionWorker(services: { config: Config; database: Database; log: Logger }, firstDelayMs = FIRST_RUN_DELAY_MS): Worker | null {
  if (!services.config.workers.enabled) return null;
  const intervalMs = services.config.retention.interval_minutes * 60_000;
  const abort = new AbortController();
  let running: Promise<void> | null = null;
  const tick = () => {
    if (running) return;
    running = (async () => {
      try {
        const r = await applyRetention(services.database, retentionHorizons(services.config), { signal: abort.signal });
        if (r.ran) services.log.info({ deleted: r.total_deleted, duration_ms: r.duration_ms, aborted: r.aborted }, "retention applied");
      } catch (err) {
        services.log.error({ err }, "retention run failed; next try at the next interval");
      } finally {
        running = null;
      }
    })();
  };
  const first = setTimeout(tick, firstDelayMs);
  const every = setInterval(tick, intervalMs);
  first.unref();
  every.unref();
  return {
    name: "retention",
    async stop() {
      clearTimeout(first);
      clearInterval(every);
      abort.abort();
      await running;
    },
  };
}
