import type { Placeholder, SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { RequestRow } from "../db/schema/requests.js";
import type { TurnFold } from "./agent-acc.js";
import type { BatchSamples } from "./sketch-json.js";

/**
 * A table (or family of tables) derived from request rows, kept in ingest's transaction from exactly
 * the rows the insert stored (never a duplicate), so it commits or rolls back with them. Ingest
 * (`createRequestStore`, src/ingest/store-requests.ts) writes the rows and hands them to an ordered
 * list of projections, wired in src/compose.ts; each projection owns its SQL and the order it locks
 * its own rows in. The list's order is the lock order between projections, in each of the three
 * steps below (docs/architecture.md, "Ingest's lock order"):
 *
 * 1. `insertCtes`: CTEs of the insert statement itself, after `ins` (the rows just inserted:
 *    id, ts, session_id, project, room_name, agent_id, modality, cost_usd, is_probe). One round trip.
 * 2. `afterInsert`: statements of their own, in list order.
 * 3. `fold`: upserts of ONE statement run last before COMMIT, in list order: the hottest rows (every
 *    batch of a tenant's hour hits them) are held for the least time.
 *
 * Every SQL text is built once and constant for the life of the process (values are parameters).
 */
export interface RequestProjection {
  readonly name: string;
  /** CTEs appended to the insert statement (their names unique across projections), reading `ins`. */
  readonly insertCtes?: (tenant: Placeholder) => readonly NamedSql[];
  /** Runs after the insert and the caller's own writes, before the fold statement, with the rows inserted. */
  readonly afterInsert?: (tx: Db, tenantId: string | null, inserted: RequestRow[], caller: CallerWrites) => Promise<void>;
  readonly fold?: FoldPart;
}

/** What the caller's own writes in ingest's transaction report (store-requests.ts' `within`). */
export interface CallerWrites {
  /** Turns it inserted and attributed to an agent, folded by the fold statement with the request rows. */
  turns: readonly TurnFold[];
  /**
   * It attributed the earlier turns of every session of the batch's rows to their agents and returned
   * their folds in `turns` (the fleet index's attach, as a CTE of its own statement: the OTLP receiver),
   * so the fleet index skips its attach statement.
   */
  sessionTurnsAttached?: boolean;
}

/** A piece of SQL with a name: a CTE's, or the placeholder a fold upsert reads its rows from. */
export interface NamedSql {
  name: string;
  sql: SQL;
}

/** A projection's share of the fold statement. */
export interface FoldPart {
  /** Its upserts, each reading a JSON array of rows from `sql.placeholder(name)`. */
  upserts(): readonly FoldUpsert[];
  /**
   * The JSON rows of each upsert (by name) for a batch, rows sorted by key (the projection's own lock
   * order); `after` runs once the fold statement ran. `turns`: turns the batch's caller inserted and
   * attributed to an agent in the same transaction (the OTLP receiver's), folded by the same upserts.
   * `samples`: which sketches may leave their raw samples out (src/rollups/sketch-json.ts).
   */
  rows(inserted: RequestRow[], turns: readonly TurnFold[], samples: BatchSamples): { values: Record<string, string>; after?: (tx: Db) => Promise<void> };
}

/**
 * A fold upsert. `leftOut`: true for a row it wrote whose sketch kept samples the batch left out
 * (leftOutSamplesSql over its sketch columns; src/rollups/sketch-json.ts): ingest then runs the
 * batch again with every sample.
 */
export interface FoldUpsert extends NamedSql {
  leftOut?: SQL;
}
