import { authenticate } from "../auth/gate.js";
import type { AuthContext } from "../auth/context.js";
import { trustedUpstreamHosts } from "../manage/url-policy.js";
import type { Services, Worker } from "../services.js";
import { type BudgetGate, OPEN_BUDGETS } from "./budget-gate.js";
import { BudgetReservations } from "./budget-reservations.js";
import { BudgetTracker } from "./budget-tracker.js";
import { collectorSpendSource, storeSpendSource } from "./spend-sources.js";
import { Cooldowns } from "./cooldown.js";
import { FleetLimiter, limitsFromConfig } from "./fleet-limiter.js";
import { type ProviderLimiter, UNLIMITED } from "./limiter.js";
import { GatewayRecorder, type RecordSink } from "./recorder.js";
import { EMPTY_TABLE, loadRoutingTable, type RoutingTable } from "./routing-table.js";
import { collectorSink, ingestSink } from "./sinks.js";
import { GatewayUpstreams } from "./upstream.js";
import { StreamRegistry, streamLimits } from "./ws/streams.js";

/**
 * The gateway's state for one process, built with the other services: the routing table in memory
 * (refreshed in the background), upstream pools, the recorder, cooldowns, the fleet-wide limiter and
 * the budget gate. Nothing on a call's path waits for the database.
 */
export class Gateway {
  table: RoutingTable = EMPTY_TABLE;
  readonly upstreams: GatewayUpstreams;
  readonly recorder: GatewayRecorder;
  readonly cooldowns: Cooldowns;
  /** The open WebSocket streams of this process: per-key cap, idle/duration limits, revocation. */
  readonly streams: StreamRegistry;
  limiter: ProviderLimiter = UNLIMITED;
  budgets: BudgetGate = OPEN_BUDGETS;
  /** Spend held by calls and streams of `block` projects while they run. */
  readonly reservations: BudgetReservations;
  /** Set when VOXGATE_COLLECTOR_URL makes this process a sidecar (records pushed to the collector). */
  readonly sidecar: boolean;
  private refreshTimer: NodeJS.Timeout | null = null;
  private loaded: Promise<void> | null = null;

  constructor(
    readonly services: Services,
    sink?: RecordSink,
  ) {
    const cfg = services.config.gateway;
    this.upstreams = new GatewayUpstreams(trustedUpstreamHosts(services.config));
    this.cooldowns = new Cooldowns(cfg.max_cooldown_ms);
    this.streams = new StreamRegistry(streamLimits(cfg.streams), (token) => this.authenticate(token));
    this.reservations = new BudgetReservations(() => this.budgets, services.rateCard);
    const limits = limitsFromConfig(services.config.rate_limiting);
    if (limits.size > 0) this.limiter = new FleetLimiter(services.database.db, limits, services.log);
    const collector = services.env.VOXGATE_COLLECTOR_URL;
    this.sidecar = Boolean(collector);
    const chosen = sink ?? (collector ? collectorSink(process.env, collector, services.env.VOXGATE_API_KEY) : ingestSink(services));
    this.recorder = new GatewayRecorder(chosen, { limit: cfg.record_queue_limit, log: services.log, observer: { queued: (r) => this.budgets.queued(r), written: (b, t) => this.budgets.written(b, t) } });
  }

  /** The caller's key, verified from memory (static keys by digest; vk_ keys cached by digest). */
  authenticate(token: string | null): Promise<AuthContext> {
    return authenticate(this.services, token);
  }

  /** Loads the routing table now (first call) and then every gateway.refresh_interval_ms. */
  async start(): Promise<Worker[]> {
    await this.refresh();
    const collector = this.services.env.VOXGATE_COLLECTOR_URL;
    const tracker = new BudgetTracker(
      collector ? collectorSpendSource(collector, this.services.env.VOXGATE_API_KEY) : storeSpendSource(this.services.database.db),
      () => this.table.projects,
      this.services.rateCard,
      this.services.log,
    );
    this.budgets = tracker;
    await tracker.start(this.services.config.gateway.refresh_interval_ms);
    this.recorder.start();
    this.streams.start();
    this.refreshTimer = setInterval(() => void this.refresh(), this.services.config.gateway.refresh_interval_ms);
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
          await this.upstreams.close();
        },
      },
    ];
  }

  /** Rebuilds the routing table; a failed refresh keeps the last table. */
  refresh(): Promise<void> {
    this.loaded ??= loadRoutingTable(this.services)
      .then((t) => {
        this.table = t;
      })
      .catch((err: unknown) => this.services.log.warn({ err: (err as Error).message }, "gateway routing table refresh failed; keeping the last one"))
      .finally(() => {
        this.loaded = null;
      });
    return this.loaded;
  }
}
