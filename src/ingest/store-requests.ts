import { type Placeholder, type SQL, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";
import { namedStatement } from "../db/named.js";
import { type RequestRow, requests } from "../db/schema/requests.js";
import { hasServerDefault, literalDefaults, recordsetType, storedColumns } from "../db/table-columns.js";
import { sqlState, withRetry } from "../db/errors.js";
import type { CallerWrites, FoldPart, NamedSql, RequestProjection } from "../rollups/projection.js";
import { ALL_SAMPLES, type BatchSamples, SampleCounts } from "../rollups/sketch-json.js";

/**
 * Columns written by ingest, in the order of the table (src/db/schema/requests.ts): all of them but
 * those the database fills itself (`created_at`). Derived, so a new column needs no edit here.
 */
const STORED = storedColumns(requests).filter((c) => !hasServerDefault(c.column));
const REQUEST_COLUMNS = STORED.map((c) => c.name);

/**
 * The table's literal defaults (project, status, pricing, is_probe). The insert names every column,
 * so a key the row leaves out (or null) would be NULL, not the default: it is filled in here.
 */
const DEFAULTS = [...literalDefaults(requests)];

/** The row itself when it names every defaulted column (rows from toRequestRow do), else a copy with the defaults. */
function withDefaults(r: RequestRow): RequestRow {
  for (const [name] of DEFAULTS) {
    if (r[name as keyof RequestRow] == null) return fillDefaults(r);
  }
  return r;
}

function fillDefaults(r: RequestRow): RequestRow {
  const out: Record<string, unknown> = { ...r };
  for (const [name, value] of DEFAULTS) out[name] ??= value;
  return out as RequestRow;
}

const columnList = sql.raw(REQUEST_COLUMNS.join(", "));

/**
 * One Postgres array literal per column (`{"a","b",NULL}`), sent as one parameter each and unnested
 * into rows: Postgres reads each value with its column type's input function and nothing else. The
 * rows as one JSON array (json_populate_recordset) cost it a JSON validation, a second parse and a
 * hash of every object's keys per row: 600 gateway rows in a loop, backend CPU 20.0 -> 14.7 ms for the
 * insert; through the whole ingest transaction ≈ 20.0 -> 18.5 us per row, and Node builds the arrays
 * for less than JSON.stringify of the rows (2026-11-24, docs/PERFORMANCE.md). A value is written as
 * the JSON payload carried it: a Date as its ISO string, a non-finite number or an invalid Date as
 * NULL, a boolean as true/false; every other element is quoted, so a string is never read as NULL
 * (test/ingest/store-columns.test.ts). A json/jsonb column (metadata) is one JSON array of its values
 * instead (jsonText), unnested alike.
 */
function columnArrays(rows: readonly RequestRow[]): string[] {
  const out: string[] = [];
  const parts: string[] = new Array(rows.length);
  for (const { name, json } of ARRAY_COLUMNS) {
    // A json/jsonb column is a JSON array of its values' texts (jsonText), the others an array literal.
    const encode = json ? jsonText : arrayElement;
    const nullText = json ? "null" : "NULL";
    const [open, close] = json ? ["[", "]"] : ["{", "}"];
    // Most columns repeat one value down a batch (model, provider, project, status, tenant, nulls):
    // the same value (or object) as the row before is not encoded again. undefined encodes as null.
    let last: unknown;
    let lastText = nullText;
    let allNull = true;
    let oneText = true;
    for (let i = 0; i < rows.length; i++) {
      const v = (rows[i] as Record<string, unknown>)[name];
      if (v !== last) {
        last = v;
        const text = encode(v);
        if (i > 0 && text !== lastText) oneText = false;
        lastText = text;
        if (lastText !== nullText) allNull = false;
      }
      parts[i] = lastText;
    }
    // A column NULL in every row is an empty array: unnests in one select list run in lockstep and
    // pad a shorter one with NULLs (the id column always has every row), so Postgres reads no
    // "NULL,NULL,…" (error_message, fallback_from, the audio tokens, metadata… in most batches).
    // A column of one value in every row (project, agent, status, pricing, rate rule, probe flag… in
    // most batches) is that value alone, repeated by Postgres (unnestColumns).
    out.push(allNull ? open + close : oneText ? `${open}${lastText}${close}` : `${open}${parts.join(",")}${close}`);
  }
  return out;
}

/** The placeholder of the batch's row count (no column has this name). */
const ROW_COUNT = "row_count";

/** The columns in order; a json/jsonb column's values are always sent as their JSON text. */
const ARRAY_COLUMNS = STORED.map((c) => ({ name: c.name, json: /^jsonb?$/.test(recordsetType(c.column)) }));

const NEEDS_ESCAPE = /["\\]/;
/**
 * An array element in double quotes, its `"` and `\` escaped (two replaceAll passes, backslashes first:
 * a global regex replace built a match object per quote).
 */
const quoted = (s: string) => (NEEDS_ESCAPE.test(s) ? `"${s.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"` : `"${s}"`);

/** A value of a scalar column as the JSON payload carried it (a boolean as true/false, as JSON spells it). */
function arrayElement(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "string") return quoted(v);
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "NULL";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (v instanceof Date) return isoText(v);
  return quoted(JSON.stringify(v));
}

/** The minute (epoch ms / 60,000) whose ISO text up to the seconds ("2026-11-28T19:30:") isoText last built. */
let isoMinute = Number.NaN;
let isoPrefix = "";
/** Dates from 1970 to 9999, which print as toISOString's 24 characters. */
const ISO_FAST_END = Date.UTC(10_000, 0, 1);

/**
 * A Date as toISOString spells it, or NULL when invalid. A batch's timestamps share their minute, so
 * its text up to the seconds is built once per minute and only the seconds and milliseconds per row:
 * toISOString was ~0.3 ms of a 500-row batch's column arrays, this ~0.03 (docs/perf/ingest.md).
 */
function isoText(d: Date): string {
  const ms = d.getTime();
  if (!(ms >= 0 && ms < ISO_FAST_END)) return Number.isNaN(ms) ? "NULL" : d.toISOString();
  const minute = Math.floor(ms / 60_000);
  if (minute !== isoMinute) {
    isoMinute = minute;
    isoPrefix = d.toISOString().slice(0, 17);
  }
  const rest = ms - minute * 60_000;
  const sec = Math.floor(rest / 1000);
  const milli = rest - sec * 1000;
  return `${isoPrefix}${sec < 10 ? "0" : ""}${sec}.${milli < 100 ? (milli < 10 ? "00" : "0") : ""}${milli}Z`;
}

/**
 * A json/jsonb column's value as an element of ONE JSON array (`[{…},null,…]`): its JSON text as is,
 * where an element of a Postgres array literal had to be quoted and its every `"` escaped (metadata
 * is all quotes: two replaceAll passes built each text twice more, the largest allocation of an OTLP
 * export, docs/perf/ingest.md). Postgres parses the array once as jsonb and splits it
 * (jsonArrayColumn). undefined and null are JSON null, stored as SQL NULL; a string is a JSON string.
 */
function jsonText(v: unknown): string {
  return v === null || v === undefined ? "null" : (JSON.stringify(v) ?? "null");
}

/**
 * `(SELECT unnest($1::uuid[]) AS id, unnest($2::timestamptz[]) AS ts, …) AS src` over the column
 * arrays: unnests in the select list stream their rows (a ProjectSet node), where one multi-array
 * `unnest(…) AS src(…)` in FROM is a function scan that first copies every row into a tuplestore.
 * Postgres CPU per stored gateway row (1,600-row batches, two sets of 5 alternating runs): median
 * 13.9 / 14.4 -> 12.2 / 12.0 us. The unnests zip row by row: every array has one length, but a
 * column NULL in every row, which is empty and padded with NULLs, and a column of one value in every
 * row, sent as that value alone and repeated once per row (array_fill; with one row the two
 * spellings are the same array). Postgres reads the value once instead of once per row, Node sends
 * it once (the bench's batch: ~60 of ~140 KB of column arrays, docs/perf/ingest.md).
 * Each column's array fills the placeholder named after the column.
 */
function unnestColumns() {
  // Each array is one parameter, named once in `a` (each placeholder drizzle meets is a parameter
  // of its own: naming it three times would send it three times).
  const arrays = STORED.map((c, i) =>
    ARRAY_COLUMNS[i]?.json
      ? sql`${jsonArrayColumn(sql.placeholder(c.name))} AS ${sql.raw(c.name)}`
      : sql`${sql.placeholder(c.name)}::${sql.raw(recordsetType(c.column))}[] AS ${sql.raw(c.name)}`,
  );
  const args = STORED.map((c) => {
    const array = sql.raw(`a.${c.name}`);
    return sql`unnest(CASE WHEN cardinality(${array}) = 1 THEN array_fill(${array}[1], ARRAY[a.${sql.raw(ROW_COUNT)}]) ELSE ${array} END) AS ${sql.raw(c.name)}`;
  });
  return sql`(SELECT ${sql.join(args, sql`, `)} FROM (SELECT ${sql.join(arrays, sql`, `)}, ${sql.placeholder(ROW_COUNT)}::int AS ${sql.raw(ROW_COUNT)}) AS a) AS src`;
}

/**
 * A json/jsonb column's JSON array (jsonText) as a jsonb[] for the unnest beside the others: parsed
 * once as jsonb and split in order (an InitPlan, once per statement), a JSON null as SQL NULL. The
 * text[] literal cast to jsonb[] it replaces parsed each element as jsonb too, after the array's own
 * unquoting.
 */
function jsonArrayColumn(param: Placeholder): SQL {
  return sql`ARRAY(SELECT nullif(e.value, 'null'::jsonb) FROM jsonb_array_elements(${param}::jsonb) WITH ORDINALITY AS e(value, i) ORDER BY e.i)`;
}

/**
 * The same columns read from the unnested arrays, except that a record from a room whose call is marked
 * probe traffic (load-test trunk) is stored as probe too: the webhook may have marked the call before
 * the agent's records arrive (the reverse order is handled when the call is marked). Only calls of the
 * record's own tenant, or of no tenant (the operator's webhook and trunks), count: room names are
 * the caller's to choose, so another tenant's call could otherwise hide this tenant's latency.
 * The probe rooms among the batch's distinct rooms (placeholder "rooms") are read once per batch (an
 * InitPlan) and each row of the batch's tenant is checked against that list: a look-up of calls per
 * row was ~0.5 ms of Postgres CPU per 500 rows of a few rooms. A row of another tenant than the
 * batch's (none that ingest writes) is still looked up on its own.
 */
function selectList(tenant: Placeholder): SQL {
  return sql.join(
    REQUEST_COLUMNS.map((c) =>
      c === "is_probe"
        ? sql`(src.is_probe OR (src.room_name IS NOT NULL AND CASE WHEN src.tenant_id IS NOT DISTINCT FROM ${tenant}::text
            THEN src.room_name = ANY(ARRAY(SELECT c.room_name FROM calls c WHERE c.room_name = ANY(${sql.placeholder(ROOMS)}::text[]) AND c.is_probe
              AND (c.tenant_id IS NULL OR c.tenant_id = ${tenant}::text)))
            ELSE EXISTS (SELECT 1 FROM calls c WHERE c.room_name = src.room_name AND c.is_probe
              AND (c.tenant_id IS NULL OR c.tenant_id = src.tenant_id)) END)) AS is_probe`
        : sql.raw(`src.${c}`),
    ),
    sql`, `,
  );
}

/** The placeholder of the batch's distinct room names (a text[] literal). */
const ROOMS = "rooms";

/** The distinct room names of the rows, as a text[] literal. */
function roomsArray(rows: readonly RequestRow[]): string {
  const rooms = new Set<string>();
  let last: string | null | undefined;
  for (const r of rows) {
    if (r.room_name === last) continue;
    last = r.room_name;
    if (typeof last === "string") rooms.add(last);
  }
  return `{${[...rooms].map(arrayElement).join(",")}}`;
}

/** Ingest's store of request rows: the insert, then its projections (src/rollups/projection.ts). */
export interface RequestStore {
  /**
   * Stores a batch of request rows of one tenant in ONE transaction: the insert (unnest of one array
   * per column; a stored (id, ts, tenant_id) is skipped, run again with ON CONFLICT … DO NOTHING when
   * the batch meets one: ts, the day-partition key, is in the key, and a re-sent record carries its
   * timestamp) with the projections' CTEs over the rows it
   * returned, then their own statements, then their one fold statement. Returns the rows actually
   * inserted. Rows are sorted by id so concurrent overlapping batches take row locks in the same
   * order (no deadlock); deadlocks that still happen are retried. `within` writes the caller's other
   * rows of the same batch (the OTLP receiver's turns and spans) in the same transaction, right after
   * the insert statement (after the session rows' locks, before the projections' own steps); the
   * turns it attributed to an agent go into the fold statement with the request rows.
   */
  store(db: Db, tenantId: string | null, rows: RequestRow[], within?: Within): Promise<RequestRow[]>;
}

/** The caller's own writes in ingest's transaction; returns the turns it attributed, for the fold. */
export type Within = (tx: Db) => Promise<CallerWrites>;

/**
 * After a batch met a stored id, this many batches in a row go straight to the insert that skips
 * duplicates (a producer re-sending records tends to re-send several batches).
 */
const CAUTIOUS_BATCHES = 32;

/** The store over an ordered list of projections (src/compose.ts wires the list; its order is the lock order). */
export function createRequestStore(projections: readonly RequestProjection[]): RequestStore {
  // The batch's tenant fills the placeholder "tenant" of the projections' CTEs.
  const ctes = () => projections.flatMap((p) => p.insertCtes?.(sql.placeholder("tenant")) ?? []);
  const insertNew = namedStatement(INSERT_NEW_STATEMENT, () => insertStatement(ctes(), false));
  const insertOrSkip = namedStatement(INSERT_STATEMENT, () => insertStatement(ctes(), true));
  const afterInsert = projections.flatMap((p) => (p.afterInsert ? [p.afterInsert] : []));
  const folds = projections.flatMap((p) => (p.fold ? [p.fold] : []));
  const fold = folds.length > 0 ? namedStatement(FOLD_STATEMENT, () => foldStatement(folds)) : null;
  let cautious = 0;
  // Per database handle (tests share one store across databases): the samples each sketch got from
  // this process's committed batches (src/rollups/sketch-json.ts).
  const sampleCounts = new WeakMap<Db, SampleCounts>();
  const countsOf = (db: Db) => {
    let counts = sampleCounts.get(db);
    if (!counts) {
      counts = new SampleCounts();
      sampleCounts.set(db, counts);
    }
    return counts;
  };

  /**
   * The transaction. `allNew`: the insert has no ON CONFLICT clause, so it fails (unique_violation)
   * on a stored id instead of skipping it; when it succeeds every row was inserted, and it returns
   * only the ids it marked probe. A batch that met a stored id runs again with ON CONFLICT … DO
   * NOTHING, which returns the id of every row inserted.
   */
  async function write(db: Db, tenantId: string | null, sorted: RequestRow[], values: Record<string, unknown>, within: Within | undefined, allNew: boolean) {
    const counts = countsOf(db);
    try {
      return await transaction(db, tenantId, sorted, values, within, allNew, () => counts.batch(), counts);
    } catch (err) {
      if (!(err instanceof LeftOutSamples)) throw err;
      // A stored sketch held fewer samples than this process counted (deleted or rebuilt meanwhile):
      // the counts start over and the batch runs again with every sample.
      counts.clear();
      return transaction(db, tenantId, sorted, values, within, allNew, ALL_SAMPLES, counts);
    }
  }

  /** One try of the batch (run again on deadlock); `samples` gives each run its view of the counts, committed after COMMIT. */
  async function transaction(
    db: Db,
    tenantId: string | null,
    sorted: RequestRow[],
    values: Record<string, unknown>,
    within: Within | undefined,
    allNew: boolean,
    samples: () => BatchSamples,
    counts: SampleCounts,
  ) {
    let batch: BatchSamples | null = null;
    const inserted = await withRetry(() =>
      db.transaction(async (tx) => {
        batch = null;
        await tx.execute(GENERIC_PLANS);
        let inserted: RequestRow[] = [];
        if (sorted.length > 0) {
          const returned = rowsOf<{ id: string; is_probe: boolean }>(await (allNew ? insertNew : insertOrSkip)(tx, values));
          inserted = allNew ? markedProbe(sorted, returned) : insertedOf(sorted, returned);
        }
        const caller: CallerWrites = within ? await within(tx) : { turns: [] };
        const turns = caller.turns;
        if (inserted.length === 0 && turns.length === 0) return [];
        for (const step of afterInsert) await step(tx, tenantId, inserted, caller);
        if (fold) {
          // Last: the fold takes the hottest row locks, held from here to COMMIT.
          const foldValues: Record<string, string> = {};
          const after: ((tx: Db) => Promise<void>)[] = [];
          const run = samples();
          for (const f of folds) {
            const out = f.rows(inserted, turns, run);
            Object.assign(foldValues, out.values);
            if (out.after) after.push(out.after);
          }
          const [leftOut] = rowsOf<Record<string, string | number>>(await fold(tx, foldValues));
          if (leftOut && Object.values(leftOut).some((n) => Number(n) > 0)) throw new LeftOutSamples();
          batch = run;
          for (const step of after) await step(tx);
        }
        return inserted;
      }),
    );
    // Committed: only now do this batch's samples count (a rolled-back try's never do).
    if (batch !== null) counts.commit(batch);
    return inserted;
  }

  return {
    async store(db, tenantId, rows, within) {
      if (rows.length === 0 && !within) return [];
      const sorted = rows.map(withDefaults).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      // The rows are already keyed by column name: one array literal per column.
      const arrays = columnArrays(sorted);
      const values: Record<string, unknown> = { tenant: tenantId, [ROW_COUNT]: sorted.length, [ROOMS]: roomsArray(sorted) };
      STORED.forEach((c, i) => {
        values[c.name] = arrays[i];
      });
      // Most batches hold only new ids: their insert skips ON CONFLICT's check of every row against
      // the unique index before inserting it (the insert checks uniqueness as it writes the index
      // anyway): ~1.2 ms of Postgres CPU per 500 rows (docs/perf/ingest.md).
      if (cautious > 0) cautious--;
      else {
        try {
          return await write(db, tenantId, sorted, values, within, true);
        } catch (err) {
          if (sqlState(err) !== UNIQUE_VIOLATION) throw err;
          cautious = CAUTIOUS_BATCHES;
        }
      }
      return write(db, tenantId, sorted, values, within, false);
    },
  };
}

const UNIQUE_VIOLATION = "23505";

/**
 * The batch's statements run on their generic plans. Postgres plans a named statement for its values
 * the first five times, then keeps the generic plan unless its estimate is above the custom plans':
 * a small batch's custom plan (1 row) always estimates cheaper, so every small batch paid ~1.6 ms of
 * planning the insert (801 plans in 1,449 batches of one record, pg_stat_statements); batches of a
 * hundred rows and more already ran the generic plan. Local to the transaction.
 */
const GENERIC_PLANS = sql`SET LOCAL plan_cache_mode = force_generic_plan`;

/** The fold kept samples a batch left out (src/rollups/sketch-json.ts): rolls the transaction back, to run it again with them. */
class LeftOutSamples extends Error {}

/** Every row inserted; the ones the insert marked probe (a probe call's room) copied with the flag, as projections must key them. */
function markedProbe(sorted: RequestRow[], probeIds: readonly { id: string }[]): RequestRow[] {
  if (probeIds.length === 0) return sorted;
  const probe = new Set(probeIds.map((r) => r.id));
  return sorted.map((r) => (probe.has(r.id) && !r.is_probe ? { ...r, is_probe: true } : r));
}

/** The rows the insert returned (duplicates are not), with the probe flag it stored. */
function insertedOf(sorted: RequestRow[], returned: readonly { id: string; is_probe: boolean }[]): RequestRow[] {
  const probe = new Map(returned.map((r) => [r.id, r.is_probe]));
  const inserted: RequestRow[] = [];
  for (const r of sorted) {
    const isProbe = probe.get(r.id);
    if (isProbe === undefined) continue;
    // Copied only when the insert marked it probe (a probe call's room), as projections must key it.
    inserted.push(isProbe === r.is_probe ? r : { ...r, is_probe: isProbe });
  }
  return inserted;
}

/** Name prefixes of the prepared statements (src/db/named.ts adds the hash of each text). */
const INSERT_STATEMENT = "voxgate_ingest_insert";
const INSERT_NEW_STATEMENT = "voxgate_ingest_insert_new";
const FOLD_STATEMENT = "voxgate_ingest_fold";

/**
 * The insert, returning the rows it inserted as `ins`, then the projections' CTEs over `ins` in list
 * order. `skipStored`: ON CONFLICT … DO NOTHING, and the statement answers the id of every row
 * inserted (duplicates are not); else a stored id fails the statement, and it answers the ids it
 * marked probe. Ids are unique per tenant and timestamp (the conflict target includes tenant_id,
 * NULLS NOT DISTINCT, and the partition key ts): another tenant's request with the same id is
 * neither touched nor reported as a duplicate.
 */
function insertStatement(ctes: readonly NamedSql[], skipStored: boolean): SQL {
  const more = ctes.map((c) => sql`, ${sql.raw(c.name)} AS (${c.sql})`);
  const onConflict = skipStored ? sql`
      ON CONFLICT (id, ts, tenant_id) DO NOTHING` : sql``;
  const answer = skipStored ? sql`SELECT id, is_probe FROM ins` : sql`SELECT id, is_probe FROM ins WHERE is_probe`;
  return sql`
    WITH ins AS (
      INSERT INTO requests (${columnList})
      SELECT ${selectList(sql.placeholder("tenant"))} FROM ${unnestColumns()}${onConflict}
      RETURNING id, ts, session_id, project, room_name, agent_id, modality, cost_usd, is_probe
    )${sql.join(more)}
    ${answer}`;
}

/**
 * The projections' upserts as ONE statement, one round trip, run in list order (the lock order): each
 * a CTE (`g0`, `g1`, …) that the final SELECT reads, one sub-select per CTE from left to right, so
 * each upsert runs when its turn comes in the select list. The fold used to be the last upsert as the
 * main statement with the others as unread CTEs: Postgres runs the main statement first and then the
 * unread CTEs from the last to the first, so billing usage was locked first and the per-agent hour
 * rows last, the reverse of re-rating's order (src/rollups/adjust.ts), which could deadlock with it.
 * test/ingest/fold-order.test.ts records the order the rows are written in.
 */
function foldStatement(folds: readonly FoldPart[]): SQL {
  const upserts = folds.flatMap((f) => f.upserts());
  if (upserts.length === 0) throw new Error("a fold projection has no upsert");
  // Each answers how many of its rows kept samples the batch left out (FoldUpsert.leftOut): none, but
  // for a stored sketch found smaller than counted.
  const ctes = upserts.map((u, i) => sql`${sql.raw(`g${i}`)} AS (${u.sql} RETURNING ${u.leftOut ?? sql`false`} AS left_out)`);
  const reads = upserts.map((_, i) => sql.raw(`(SELECT count(*) FILTER (WHERE left_out) FROM g${i}) AS n${i}`));
  return sql`WITH ${sql.join(ctes, sql`, `)} SELECT ${sql.join(reads, sql`, `)}`;
}
