import type { AuthContext } from "./auth/context.js";
import type { AuthFailures } from "./auth/failures.js";
import type { StaticKey } from "./auth/static-keys.js";
import type { VirtualKeyVerifier } from "./auth/virtual-keys.js";
import type { RateCardStore } from "./billing/rate-card-store.js";
import type { ObservationQueue } from "./calls/observation-queue.js";
import type { CallWriter } from "./calls/writer.js";
import type { Env } from "./config/env.js";
import type { Config } from "./config/schema.js";
import type { Database } from "./db/client.js";
import type { Gateway } from "./gateway/gateway.js";
import type { Logger } from "./logging.js";
import type { UpstreamPools } from "./manage/provider-check.js";
import type { SecretBox } from "./secrets/box.js";

/*
 * The Services and Worker types: a leaf module that imports only types, so any module may name them
 * without a runtime import cycle. Building, starting and stopping them is services-runtime.ts.
 */
/** A background task that must be stopped (and drained) on shutdown. */
export interface Worker {
  name: string;
  stop(): Promise<void>;
}

/**
 * Everything a route needs, built once per process (or per test) and injected as c.var.services.
 * Nothing in Voxgate is a module singleton: a test builds its own Services over its own database.
 */
export interface Services {
  database: Database;
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
  /** Rate card + price catalog in memory; rating reads snapshot(), rule changes call refresh(). */
  rateCard: RateCardStore;
  /** Provider API keys at rest (AES-256-GCM under VOXGATE_SECRET or its fallbacks); loaded on first use. */
  secrets: SecretBox;
  /** undici pools per provider origin for connectivity tests (no redirects). */
  upstreams: UpstreamPools;
  /** Bounded queue + flusher of POST /v1/calls/observations; drained by stopWorkers. */
  callObservations: ObservationQueue;
  /** Group-committing writer of LiveKit webhook events (calls, legs, events). */
  callWriter: CallWriter;
  /** The gateway's in-memory routing table, upstream pools, recorder, limits and budgets. */
  gateway: Gateway;
  /** Background workers started by startWorkers; stopped in reverse order on shutdown. */
  workers: Worker[];
}

/** Auth is on as soon as any static key is configured (auth.api_keys, VOXGATE_API_KEY or VOXGATE_INGEST_KEY). */
export function authEnabled(services: Services): boolean {
  return services.staticKeys.size > 0;
}

export type { AuthContext };
