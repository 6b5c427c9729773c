import type { Db } from "../db/client.js";
import type { requests } from "../db/schema/index.js";

export type RequestRow = typeof requests.$inferInsert;

/**
 * INTERFACE STUB (platform issue): folds newly stored request rows into request_rollups.
 * Ingest calls it inside its transaction with exactly the rows it inserted (never duplicates).
 * The read-path issue implements it.
 */
export async function applyRequestRollups(_tx: Db, _rows: RequestRow[]): Promise<void> {}
