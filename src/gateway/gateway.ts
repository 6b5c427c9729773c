import type { AuthContext } from "../auth/context.js";
import type { RateCardStore } from "../billing/rate-card-store.js";
import type { Config } from "../config/schema.js";
import type { Db } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { Worker } from "../worker.js";
import { type BudgetGate, OPEN_BUDGETS } from "./budget-gate.js";
import { BudgetLeases } from "./budget-leases.js";
import { BudgetReservations } from "./budget-reservations.js";
import { BudgetTracker, type SpendSource } from "./budget-tracker.js";
import { Cooldowns } from "./cooldown.js";
import { FleetLimiter, limitsFromConfig } from "./fleet-limiter.js";
import { type ProviderLimiter, UNLIMITED } from "./limiter.js";
import { GatewayRecorder, type RecordSink } from "./recorder.js";
import { EMPTY_TABLE, type RoutingTable } from "./routing-table.js";
import { GatewayUpstreams } from "./upstream.js";
import { StreamRegistry, streamLimits } from "./ws/streams.js";

/** What the gateway is built from; the composition root (src/compose.ts) chooses each one. */
export interface GatewayDeps {
  /** The sections it reads: gateway.*, serve.body_limit_bytes, rate_limiting. */
  config: Pick<Config, "gateway" | "serve" | "rate_limiting" | "voices">;
  log: Logger;
  /** The one key verifier (auth/gate.ts), bound to this process's keys: a promise only for a vk_ key. */
  authenticate: (token: string | null) => AuthContext | Promise<AuthContext>;
  /** Any static key configured; with auth off the gateway answers loopback clients only. */
  authEnabled: boolean;
  /** Prices today's spend for the budget gate. */
  rateCard: RateCardStore;
  /** The fleet-wide limiter's counters. */
  db: Db;
  /** Where call records go (the local ingest path, or the collector for a sidecar). */
  sink: RecordSink;
  /** Where today's spend per project is read (the store, or the collector for a sidecar). */
  spend: SpendSource;
  /** Builds the routing table from the registry (routing-table.ts loadRoutingTable). */
  loadTable: () => Promise<RoutingTable>;
  /** Hosts a provider base URL may name (manage/url-policy.ts). */
  trustedHosts: ReadonlySet<string>;
  /** Set when VOXGATE_COLLECTOR_URL makes this process a sidecar (records pushed to the collector). */
  sidecar: boolean;
  /** The sink exports calls as spans (src/gateway/span-sink.ts): calls keep the caller's trace context. */
  exportsSpans?: boolean;
}

/**
 * The gateway's state for one process: the routing table in memory (refreshed in the background),
 * upstream pools, the recorder, cooldowns, the fleet-wide limiter and the budget gate. Nothing on a
 * call's path waits for the database.
 */
export class Gateway {
  table: RoutingTable = EMPTY_TABLE;
  readonly config: GatewayDeps["config"];
  readonly log: Logger;
  readonly authEnabled: boolean;
  readonly upstreams: GatewayUpstreams;
  readonly recorder: GatewayRecorder;
  readonly cooldowns: Cooldowns;
  /** The open WebSocket streams of this process: per-key cap, idle/duration limits, revocation. */
  readonly streams: StreamRegistry;
  limiter: ProviderLimiter = UNLIMITED;
  budgets: BudgetGate = OPEN_BUDGETS;
  /** Spend held by calls and streams of `block` projects while they run. */
  readonly reservations: BudgetReservations;
  readonly sidecar: boolean;
  /** Calls keep the caller's `traceparent` for their spans (off: no header is read for it). */
  readonly exportsSpans: boolean;
  private refreshTimer: NodeJS.Timeout | null = null;
  private loaded: Promise<void> | null = null;

  constructor(private readonly deps: GatewayDeps) {
    const cfg = deps.config.gateway;
    this.config = deps.config;
    this.log = deps.log;
    this.authEnabled = deps.authEnabled;
    this.sidecar = deps.sidecar;
    this.exportsSpans = deps.exportsSpans ?? false;
    this.upstreams = new GatewayUpstreams(deps.trustedHosts);
    this.cooldowns = new Cooldowns(cfg.max_cooldown_ms);
    this.streams = new StreamRegistry(streamLimits(cfg.streams), async (token) => this.authenticate(token));
    this.reservations = new BudgetReservations(() => this.budgets, deps.rateCard);
    const limits = limitsFromConfig(deps.config.rate_limiting);
    if (limits.size > 0) this.limiter = new FleetLimiter(deps.db, limits, deps.log);
    this.recorder = new GatewayRecorder(deps.sink, { limit: cfg.record_queue_limit, log: deps.log, observer: { queued: (r) => this.budgets.queued(r), written: (b, t) => this.budgets.written(b, t) } });
  }

  /** The caller's key, verified from memory (static keys by digest; vk_ keys cached by digest). */
  authenticate(token: string | null): AuthContext | Promise<AuthContext> {
    return this.deps.authenticate(token);
  }

  /** Loads the routing table now (first call) and then every gateway.refresh_interval_ms. */
  async start(): Promise<Worker[]> {
    await this.refresh();
    const tracker = new BudgetTracker(this.deps.spend, () => this.table.projects, this.deps.rateCard, this.log);
    this.budgets = tracker;
    await tracker.start(this.config.gateway.refresh_interval_ms);
    this.recorder.start();
    this.streams.start();
    // Replicas sharing the store claim stream increments fleet-wide; a sidecar's store is not the fleet's.
    const leases = this.sidecar ? null : new BudgetLeases(this.deps.db, () => this.reservations.holdings(), this.log);
    this.reservations.fleet = leases;
    this.refreshTimer = setInterval(() => void this.refresh(), this.config.gateway.refresh_interval_ms);
    this.refreshTimer.unref();
    return [
      { name: "gateway-recorder", stop: () => this.recorder.stop() },
      {
        name: "gateway-upstreams",
        stop: async () => {
          if (this.refreshTimer) clearInterval(this.refreshTimer);
          this.streams.stop();
          await this.limiter.stop?.();
          await this.budgets.stop?.();
          await leases?.stop();
          await this.upstreams.close();
        },
      },
    ];
  }

  /** Rebuilds the routing table; a failed refresh keeps the last table. */
  refresh(): Promise<void> {
    this.loaded ??= this.deps
      .loadTable()
      .then((t) => {
        this.table = t;
      })
      .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, "gateway routing table refresh failed; keeping the last one"))
      .finally(() => {
        this.loaded = null;
      });
    return this.loaded;
  }
}
