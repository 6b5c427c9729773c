import type { Config } from "../config/schema.js";
import type { Db } from "../db/client.js";
import type { Catalog, RateCard } from "./rate.js";

/**
 * INTERFACE STUB (platform issue): the rate card in effect (seed + database overrides) and the
 * price catalog, held in memory so rating never queries. The billing issue fills this in.
 */
export class RateCardStore {
  private card: RateCard;
  private catalog: Catalog = {};

  constructor(
    private readonly db: Db,
    config: Config,
  ) {
    this.card = { defaultMarkup: config.rate_card.default_markup };
  }

  /** The card and catalog to rate with right now (synchronous: the hot path never waits). */
  snapshot(): { card: RateCard; catalog: Catalog } {
    return { card: this.card, catalog: this.catalog };
  }

  /** Re-reads database override rules; called at start, after a rule change, and periodically. */
  async refresh(): Promise<void> {
    void this.db;
  }
}
