import type { Config } from "../config/schema.js";
import type { Db } from "../db/client.js";
import { providers } from "../db/schema/index.js";
import { inferProviderType } from "../manage/registry.js";
import { type Catalog, compileCatalog } from "./catalog.js";
import { type CardRule, compileRateCard, type RateCard, seedRule } from "./rate.js";
import { listDbRules } from "./rule-store.js";
import { toRuleDef } from "./rule-form.js";

/** How often every replica re-reads the database rules (a change elsewhere shows here within this). */
export const RATE_CARD_REFRESH_MS = 10_000;

/**
 * The rate card in effect (seed `rate_card` + database override rules) and the price catalog
 * (shipped + `pricing.catalog`), compiled in memory so rating never queries. A refresh swaps in a
 * new compiled card atomically; snapshot() always returns a consistent pair.
 */
export class RateCardStore {
  private card: RateCard;
  private catalog: Catalog;
  private readonly seed: CardRule[];
  private refreshedAt: Date | null = null;
  private inflight: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    private readonly config: Config,
  ) {
    // Seed rules were validated (matrix + one per scope) when the config was parsed.
    this.seed = config.rate_card.rules.map((r) => seedRule(toRuleDef(r)));
    this.card = compileRateCard(config.rate_card.default_markup, this.seed);
    this.catalog = compileCatalog(config.pricing.catalog, this.configSelfHosted());
  }

  /** The card and catalog to rate with right now (synchronous: the hot path never waits). */
  snapshot(): { card: RateCard; catalog: Catalog } {
    return { card: this.card, catalog: this.catalog };
  }

  /** When the database rules were last read (null before the first refresh). */
  lastRefreshedAt(): Date | null {
    return this.refreshedAt;
  }

  /** Re-reads database override rules (and self-hosted providers); called at start, after a rule change, and periodically. */
  async refresh(): Promise<void> {
    // Calls that overlap share one read, but a call that starts after a change always reads it:
    // the write that triggers a refresh commits before calling, so wait for any older read to finish first.
    while (this.inflight) await this.inflight.catch(() => {});
    this.inflight = this.load();
    try {
      await this.inflight;
    } finally {
      this.inflight = null;
    }
  }

  private async load(): Promise<void> {
    const [dbRules, dbProviders] = await Promise.all([
      listDbRules(this.db),
      this.db.select({ providerId: providers.providerId, providerType: providers.providerType }).from(providers),
    ]);
    const selfHosted = new Set(this.configSelfHosted());
    for (const p of dbProviders) if (inferProviderType(p.providerId, p.providerType) === "openai_compatible") selfHosted.add(p.providerId);
    const catalog = compileCatalog(this.config.pricing.catalog, selfHosted);
    const card = compileRateCard(this.config.rate_card.default_markup, this.seed, dbRules);
    this.card = card;
    this.catalog = catalog;
    this.refreshedAt = new Date();
  }

  /** Re-reads every RATE_CARD_REFRESH_MS so rule changes made through another replica apply here. */
  startRefresher(onError: (err: unknown) => void, intervalMs = RATE_CARD_REFRESH_MS): { name: string; stop(): Promise<void> } {
    const timer = setInterval(() => {
      this.refresh().catch(onError);
    }, intervalMs);
    timer.unref();
    return {
      name: "rate-card-refresh",
      stop: async () => {
        clearInterval(timer);
        while (this.inflight) await this.inflight.catch(() => {});
      },
    };
  }

  private configSelfHosted(): string[] {
    return Object.entries(this.config.providers)
      .filter(([id, p]) => inferProviderType(id, p.type) === "openai_compatible")
      .map(([id]) => id);
  }
}
