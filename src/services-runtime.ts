import { AuthFailures } from "./auth/failures.js";
import { staticKeysFromConfig } from "./auth/static-keys.js";
import { VirtualKeyVerifier } from "./auth/virtual-keys.js";
import { RateCardStore } from "./billing/rate-card-store.js";
import { ObservationQueue } from "./calls/observation-queue.js";
import { CallWriter } from "./calls/writer.js";
import { type Env, loadtestTrunkIds } from "./config/env.js";
import type { Config } from "./config/schema.js";
import type { Database } from "./db/client.js";
import { Gateway } from "./gateway/gateway.js";
import type { Logger } from "./logging.js";
import { UpstreamPools } from "./manage/provider-check.js";
import { trustedUpstreamHosts } from "./manage/url-policy.js";
import { startNodeScraper } from "./nodes/scraper.js";
import { startRetentionWorker } from "./retention/worker.js";
import { SecretBox } from "./secrets/box.js";
import { reencryptProviderKeys } from "./secrets/rotate.js";
import type { Services } from "./services.js";

export interface ServicesInput {
  database: Database;
  config: Config;
  configPath?: string | null;
  env: Env;
  log: Logger;
}

export function createServices(input: ServicesInput): Services {
  const loadtestTrunks = loadtestTrunkIds(input.env);
  const services: Omit<Services, "gateway"> & { gateway?: Gateway } = {
    database: input.database,
    config: input.config,
    configPath: input.configPath ?? null,
    env: input.env,
    log: input.log,
    startedAt: Date.now(),
    staticKeys: staticKeysFromConfig(input.config, input.env),
    virtualKeys: new VirtualKeyVerifier(input.database.db),
    authFailures: new AuthFailures(input.log),
    rateCard: new RateCardStore(input.database.db, input.config),
    secrets: new SecretBox({ secret: input.env.VOXGATE_SECRET, previous: input.env.VOXGATE_SECRET_PREVIOUS, home: input.env.HOME }),
    upstreams: new UpstreamPools(trustedUpstreamHosts(input.config)),
    callObservations: new ObservationQueue({
      db: input.database.db,
      log: input.log,
      loadtestTrunks,
    }),
    callWriter: new CallWriter(input.database.db, { loadtestTrunks }),
    workers: [],
  };
  const full = services as Services;
  full.gateway = new Gateway(full);
  return full;
}

/** Starts background workers (queues, scrapers, refreshers). Areas register theirs here. */
export async function startWorkers(services: Services): Promise<void> {
  await services.rateCard.refresh();
  services.workers.push({ name: "provider-upstreams", stop: () => services.upstreams.close() });
  services.workers.push({ name: "legacy-key-bcrypt", stop: () => services.virtualKeys.legacy.close() });
  try {
    await reencryptProviderKeys(services);
  } catch (err) {
    // Rotation is best effort: stale rows stay readable with VOXGATE_SECRET_PREVIOUS and retry next start.
    services.log.error({ err }, "re-encrypting provider keys failed");
  }
  const scraper = startNodeScraper(services);
  if (scraper) services.workers.push(scraper);
  const retention = startRetentionWorker(services);
  if (retention) services.workers.push(retention);
  services.workers.push(services.rateCard.startRefresher((err) => services.log.warn({ err }, "rate card refresh failed; keeping the last card")));
  services.workers.push(services.callObservations);
  // Registered last so it stops first: the recorder drains before the store closes.
  services.workers.push(...(await services.gateway.start()));
}

/** Stops workers in reverse start order; each drains what it holds. */
export async function stopWorkers(services: Services): Promise<void> {
  for (const w of [...services.workers].reverse()) {
    try {
      await w.stop();
    } catch (err) {
      services.log.error({ err, worker: w.name }, "worker failed to stop cleanly");
    }
  }
  services.workers.length = 0;
}
