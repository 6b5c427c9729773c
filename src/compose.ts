import { authenticate, authEnabled, type KeyGate } from "./auth/gate.js";
import { AuthFailures } from "./auth/failures.js";
import { type StaticKey, staticKeysFromConfig } from "./auth/static-keys.js";
import { VirtualKeyVerifier } from "./auth/virtual-keys.js";
import { RateCardStore } from "./billing/rate-card-store.js";
import { ObservationQueue } from "./calls/observation-queue.js";
import { CallWriter } from "./calls/writer.js";
import { type Env, loadtestTrunkIds, traceExportOf } from "./config/env.js";
import type { Config } from "./config/schema.js";
import type { Database } from "./db/client.js";
import { createRequestStore, type RequestStore } from "./ingest/store-requests.js";
import { sessionsProjection } from "./ingest/sessions-projection.js";
import { billingUsageProjection } from "./rollups/billing-usage.js";
import { requestRollupsProjection } from "./rollups/apply.js";
import { fleetIndexProjection } from "./rollups/fleet-index.js";
import type { RequestProjection } from "./rollups/projection.js";
import { Gateway } from "./gateway/gateway.js";
import { loadRoutingTable } from "./gateway/routing-table.js";
import { collectorSink, ingestSink } from "./gateway/sinks.js";
import { spanSink } from "./gateway/span-sink.js";
import { collectorSpendSource, storeSpendSource } from "./gateway/spend-sources.js";
import type { Logger } from "./logging.js";
import { UpstreamPools } from "./manage/provider-check.js";
import { trustedUpstreamHosts } from "./manage/url-policy.js";
import { startNodeScraper } from "./nodes/scraper.js";
import { SecretBox } from "./secrets/box.js";
import { startRetentionWorker } from "./retention/worker.js";
import { cachedTableSizes, type TableSizes } from "./retention/stats.js";
import { reencryptProviderKeys } from "./secrets/rotate.js";
import type { Worker } from "./worker.js";

/*
 * The composition root: the one module that builds every subsystem of a process and wires them
 * together. Each subsystem is built from the narrow inputs it uses (the gateway from its config
 * sections, a logger, an authenticate function, the rate card, a db handle, a record sink…); route
 * modules take theirs as arguments (src/http/app.ts). Only this module, app.ts's caller (server.ts)
 * and the tests' harness see the whole set.
 */

export interface ServicesInput {
  database: Database;
  config: Config;
  configPath?: string | null;
  env: Env;
  log: Logger;
  /** A read replica for the read routes (DATABASE_READ_URL); without it they read `database`. */
  readDatabase?: Database;
}

/** What the root wired for one process (or one test): built once, never a module singleton. */
export interface Services {
  database: Database;
  /** The read routes' database: the replica when DATABASE_READ_URL is set, else `database`. */
  readDatabase: Database;
  config: Config;
  configPath: string | null;
  env: Env;
  log: Logger;
  startedAt: number;
  /** Static keys by SHA-256 digest; empty map + no vk_ gate = auth off. */
  staticKeys: Map<string, StaticKey>;
  virtualKeys: VirtualKeyVerifier;
  /** Refused credentials: counted for /v1/metrics, logged at warn at most once per interval. */
  authFailures: AuthFailures;
  /** The raw tables' sizes for /v1/metrics, recomputed at most once a minute (src/retention/stats.ts). */
  tableSizes: () => Promise<TableSizes>;
  /** Rate card + price catalog in memory; rating reads snapshot(), rule changes call refresh(). */
  rateCard: RateCardStore;
  /** Provider API keys at rest (AES-256-GCM under VOXGATE_SECRET or its fallbacks); loaded on first use. */
  secrets: SecretBox;
  /** undici pools per provider origin for connectivity tests (no redirects). */
  upstreams: UpstreamPools;
  /** Bounded queue + flusher of POST /v1/calls/observations; drained by stopWorkers. */
  callObservations: ObservationQueue;
  /** Ingest's store of request rows and its projections (requestProjections). */
  requests: RequestStore;
  /** Group-committing writer of LiveKit webhook events (calls, legs, events). */
  callWriter: CallWriter;
  /** The gateway's in-memory routing table, upstream pools, recorder, limits and budgets. */
  gateway: Gateway;
  /** Background workers started by startWorkers; stopped in reverse order on shutdown. */
  workers: Worker[];
}

/**
 * What ingest keeps from the request rows it stores, in order: the order is the lock order between
 * them (docs/architecture.md, "Ingest's lock order"). Sessions (in the insert statement), then the
 * fleet index (turn attribution after the insert; per-agent rollups first in the fold statement),
 * the request rollups and billing usage (the fold statement's other upserts). Day partitions of
 * `requests` (retention) are created ahead by the retention worker, not per batch; a projection that
 * must write per batch goes into this list where its locks belong.
 */
export function requestProjections(): RequestProjection[] {
  return [sessionsProjection, fleetIndexProjection, requestRollupsProjection, billingUsageProjection];
}

export function createServices(input: ServicesInput): Services {
  const { database, config, env, log } = input;
  const db = database.db;
  const loadtestTrunks = loadtestTrunkIds(env);
  const staticKeys = staticKeysFromConfig(config, env);
  const virtualKeys = new VirtualKeyVerifier(db);
  const authFailures = new AuthFailures(log);
  const keys: KeyGate = { staticKeys, virtualKeys, authFailures };
  const rateCard = new RateCardStore(db, config);
  const secrets = new SecretBox({ secret: env.VOXGATE_SECRET, previous: env.VOXGATE_SECRET_PREVIOUS, home: env.HOME });
  const trustedHosts = trustedUpstreamHosts(config);
  const collector = env.VOXGATE_COLLECTOR_URL;
  const requests = createRequestStore(requestProjections());
  // A sidecar pushes its records and reads today's spend from the collector; otherwise the local store.
  const records = collector ? collectorSink(collector, env.VOXGATE_API_KEY, env.VOXGATE_AGENT_ID) : ingestSink({ config, database, rateCard, requests, log });
  // With the OTel variables set, calls are also exported as GenAI spans; the SDK is imported only then.
  const spans = traceExportOf(env);
  const gateway = new Gateway({
    config,
    log,
    authenticate: (token) => authenticate(keys, token),
    authEnabled: authEnabled(keys),
    rateCard,
    db,
    sink: spans ? spanSink(records, () => import("./gateway/genai-spans.js").then((m) => m.genaiSpanWriter(spans, rateCard)), log) : records,
    spend: collector ? collectorSpendSource(collector, env.VOXGATE_API_KEY) : storeSpendSource(db),
    loadTable: () => loadRoutingTable({ config, database, secrets }),
    trustedHosts,
    sidecar: Boolean(collector),
    exportsSpans: spans !== null,
  });
  return {
    database,
    readDatabase: input.readDatabase ?? database,
    config,
    configPath: input.configPath ?? null,
    env,
    log,
    startedAt: Date.now(),
    staticKeys,
    virtualKeys,
    authFailures,
    tableSizes: cachedTableSizes(db),
    rateCard,
    secrets,
    upstreams: new UpstreamPools(trustedHosts),
    callObservations: new ObservationQueue({ db, log, loadtestTrunks }),
    requests,
    callWriter: new CallWriter(db, { loadtestTrunks }),
    gateway,
    workers: [],
  };
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
