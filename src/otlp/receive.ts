import { type IngestDeps, ingestRecords } from "../ingest/ingest-requests.js";
import { checkTurns, insertNumberedTurns, numberTurns } from "../ingest/turns.js";
import {
  CLOSING_SPANS,
  type FreshSpan,
  identityOf,
  MAPPED_SPANS,
  mapTrace,
  namesSession,
  type OtlpRecord,
  type OtlpTurn,
  spansToKeep,
  type TraceIdentity,
} from "./map.js";
import type { Attrs, DecodedRequest } from "./spans.js";
import { fixTraceIdentities, insertTurnsAndSpans, loadTraceState, pruneTraceState, spanValues } from "./store.js";
import { resolveSttModels, type SttModelConfig } from "./stt-model.js";
import type { ExportGate } from "./admission.js";
import { emptyWriteQueue, queueWrite, type WriteQueue } from "./write-queue.js";

/** What the receiver writes with: ingest's inputs, and the yaml sections that name a Node agent's STT model. */
export type OtlpDeps = IngestDeps & { config: SttModelConfig };

/**
 * How long the spans of a trace that names no session (no gen_ai.conversation.id or lk.job_id yet)
 * wait before the trace id becomes its session. Node agents in a job name it on the first LLM
 * request; Python agents and sessions outside a job only on the session span sent at close.
 */
export const OTLP_SESSION_WAIT_MS = 15 * 60_000;
/** Pairing state is pruned about once per this many export batches. */
const PRUNE_EVERY = 500;

/** Per-process receiver state: counters for /v1/metrics and the write-path gate. */
export interface OtlpState extends ExportGate {
  batches: number;
  spansReceived: number;
  spansUnmapped: Map<string, number>;
  spansRejected: number;
  /** Per trace id, the last export that claimed it: exports of one trace run one after the other (see receiveTraces). */
  traceTails: Map<string, Promise<void>>;
  /** Exports waiting for a writer, and the writers (src/otlp/write-queue.ts). */
  writes: WriteQueue<ExportWrite, ExportOutcome>;
}

const states = new WeakMap<object, OtlpState>();

/** The receiver state of one Services (one app); created on first use. */
export function otlpState(services: object): OtlpState {
  let s = states.get(services);
  if (!s) {
    s = { inFlight: 0, inFlightBytes: 0, batches: 0, spansReceived: 0, spansUnmapped: new Map(), spansRejected: 0, traceTails: new Map(), writes: emptyWriteQueue() };
    states.set(services, s);
  }
  return s;
}

/** LiveKit span names counted one by one when dropped; any other name under "other" (the metric's labels stay a fixed set). */
const KNOWN_UNMAPPED = new Set([
  "eou_detection",
  "function_tool",
  "start_agent_activity",
  "drain_agent_activity",
  "on_enter",
  "on_exit",
  "answering_machine_detection",
  "event_loop_blocked",
]);

export interface ExportOutcome {
  rejectedSpans: number;
  errorMessage: string;
}

/**
 * One claimed export's spans by trace, as written with the others of its group, and what its decoding
 * rejected. Not the decoded request: its unmapped spans would live on while the export waits.
 */
interface ExportWrite {
  byTrace: Map<string, { fresh: FreshSpan[]; resource: Attrs }>;
  rejected: number;
  firstRejection: string | null;
}

/**
 * Maps one decoded export to records and turns and stores them through ingest's typed entry (the
 * records are built typed: no wire-format parse; each value's rule, rating, sessions, rollups;
 * tenant from the key), the turns and the batch's spans in the same transaction: an export is
 * stored whole or not at all, and the exporter's retry maps it again.
 */
export async function receiveTraces(
  services: OtlpDeps,
  state: OtlpState,
  tenantId: string | null,
  headerProject: string | null,
  decoded: DecodedRequest,
): Promise<ExportOutcome> {
  const byTrace = new Map<string, { fresh: FreshSpan[]; resource: Attrs }>();
  let received = decoded.rejected;
  for (const batch of decoded.batches) {
    const project = projectOf(batch.resource) ?? headerProject;
    const python = batch.resource["telemetry.sdk.language"] === "python";
    for (const span of batch.spans) {
      received++;
      if (!MAPPED_SPANS.has(span.name)) {
        countUnmapped(state, span.name);
        continue;
      }
      let trace = byTrace.get(span.traceId);
      if (!trace) {
        trace = { fresh: [], resource: batch.resource };
        byTrace.set(span.traceId, trace);
      }
      // The decoded span is this export's own: it takes its resource's project and runtime in place
      // (a copy of each of 500 spans showed in the receiver's CPU profile).
      const fresh = span as FreshSpan;
      fresh.project = project;
      fresh.python = python;
      trace.fresh.push(fresh);
    }
  }
  state.spansReceived += received;
  state.spansRejected += decoded.rejected;
  if (byTrace.size === 0) return { rejectedSpans: decoded.rejected, errorMessage: decoded.firstRejection ?? "" };

  // Exports are written concurrently (MAX_CONCURRENT_WRITES writers, each taking the exports of one
  // tenant waiting together as one batch: src/otlp/write-queue.ts), but two exports naming the same
  // trace run one after the other: each reads the trace's stored spans, maps them with its own and
  // stores its spans, so a turn split over two concurrent exports would otherwise be seen by neither
  // (and their session rows, turns and otlp_spans rows would be locked by both). The trace ids are
  // claimed all at once, synchronously, so an export only ever waits for exports that claimed before
  // it: no cycle; exports waiting for a writer never share a trace. An export queues for a writer
  // only after its traces are claimed, so a writer never waits for a trace. Batches of different
  // traces share only rows every writer takes in one order (docs/architecture.md, "Ingest's lock
  // order": requests by id, sessions by id, agent versions, turns by (session, turn_index), per-agent
  // rollups, request rollups, billing usage, by key), so they wait for each other instead of
  // deadlocking; a deadlock that still happens (another writer of the same session) is retried whole
  // (withRetry).
  const release = await claimTraces(state, [...byTrace.keys()]);
  try {
    const spans = decoded.batches.reduce((n, b) => n + b.spans.length, 0);
    const write: ExportWrite = { byTrace, rejected: decoded.rejected, firstRejection: decoded.firstRejection };
    return await queueWrite(state.writes, write, tenantId, spans, (group) => writeExports(services, state, tenantId, group));
  } finally {
    release();
  }
}

/** Waits for every earlier export of these traces; returns the release of this export's claim. */
async function claimTraces(state: OtlpState, traceIds: string[]): Promise<() => void> {
  let release: () => void = () => {};
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const earlier: Promise<void>[] = [];
  for (const id of traceIds) {
    const tail = state.traceTails.get(id);
    if (tail) earlier.push(tail);
    state.traceTails.set(id, mine);
  }
  await Promise.all(earlier);
  return () => {
    release();
    for (const id of traceIds) if (state.traceTails.get(id) === mine) state.traceTails.delete(id);
  };
}

/**
 * Writes a group of exports of one tenant (no two share a trace) as one batch; one outcome per export,
 * in order.
 */
async function writeExports(services: OtlpDeps, state: OtlpState, tenantId: string | null, group: ExportWrite[]): Promise<ExportOutcome[]> {
  const db = services.database.db;
  const now = Date.now();
  const byTrace = new Map<string, { fresh: FreshSpan[]; resource: Attrs }>();
  for (const e of group) for (const [traceId, t] of e.byTrace) byTrace.set(traceId, t);
  // Traces this batch may be the first to see and can name (a span names the session or closes
  // it): fixed in the read's statement when no span of theirs is stored yet.
  const firstSight = new Map<string, TraceIdentity>();
  for (const [traceId, t] of byTrace) {
    if (t.fresh.some((s) => namesSession(s) || CLOSING_SPANS.has(s.name))) firstSight.set(traceId, identityOf(traceId, t.fresh, t.resource));
  }
  const stored = await loadTraceState(db, tenantId, [...byTrace.keys()], firstSight);
  // A trace is mapped once its session is known: fixed by an earlier batch, named by a span
  // (gen_ai.conversation.id, lk.job_id), over (the session span came), or waiting too long (the
  // trace id then). Until then its spans wait in otlp_spans, so no record lands under a session
  // id the trace's later spans would contradict.
  const wanted = new Map<string, TraceIdentity>();
  const ready = new Map<string, TraceIdentity>();
  for (const [traceId, t] of byTrace) {
    const earlier = stored.spans.get(traceId) ?? [];
    const known = stored.identities.get(traceId);
    const seen = earlier.length === 0 ? firstSight.get(traceId) ?? identityOf(traceId, t.fresh, t.resource) : identityOf(traceId, [...earlier, ...t.fresh], t.resource);
    if (known) {
      ready.set(traceId, known);
      if ((!known.roomName && seen.roomName) || (!known.agentId && seen.agentId)) {
        wanted.set(traceId, { sessionId: known.sessionId, roomName: known.roomName ?? seen.roomName, agentId: known.agentId ?? seen.agentId });
      }
      continue;
    }
    const spans = [...earlier, ...t.fresh];
    const waitedMs = earlier.reduce((oldest, s) => Math.max(oldest, now - s.receivedMs), 0);
    if (spans.some(namesSession) || spans.some((s) => CLOSING_SPANS.has(s.name)) || waitedMs >= OTLP_SESSION_WAIT_MS) wanted.set(traceId, seen);
  }
  for (const [traceId, identity] of await fixTraceIdentities(db, tenantId, wanted)) ready.set(traceId, identity);

  const records: OtlpRecord[] = [];
  const turns: OtlpTurn[] = [];
  const keep: FreshSpan[] = [];
  // Where each export's records and turns start (they are mapped export by export, in order).
  const recordStarts: number[] = [];
  const turnStarts: number[] = [];
  // Mapped traces with spans that waited for their session (stored unmapped): they are mapped now.
  const waited = new Set<string>();
  for (const e of group) {
    recordStarts.push(records.length);
    turnStarts.push(turns.length);
    for (const [traceId, t] of e.byTrace) {
      const earlier = stored.spans.get(traceId) ?? [];
      const storedIds = new Set(earlier.map((s) => s.spanId));
      const novel = earlier.length === 0 ? t.fresh : t.fresh.filter((s) => !storedIds.has(s.spanId)); // a re-sent span is stored already
      const identity = ready.get(traceId);
      if (!identity) {
        keep.push(...novel); // every span waits for the session
        continue;
      }
      // Only what a later batch reads back (spansToKeep): the INSERT of every span cost ~15-30 ms an export.
      keep.push(...spansToKeep(earlier, novel));
      if (earlier.some((s) => !s.mapped)) waited.add(traceId);
      const mapped = mapTrace({
        tenantId,
        identity,
        stored: earlier.filter((s) => s.mapped),
        fresh: earlier.length === 0 ? novel : [...earlier.filter((s) => !s.mapped), ...novel],
      });
      records.push(...mapped.records);
      turns.push(...mapped.turns);
    }
  }
  resolveSttModels(records, services.config);
  // One transaction for the whole batch: records (with their sessions and rollups), turns and the
  // kept spans. Three transactions per batch held the session and rollup locks three times over.
  // Every skipped turn and record is listed, so each is counted against the export it came from.
  const checkedTurns = checkTurns(turns, Number.POSITIVE_INFINITY);
  // Seqs taken before the transaction (numberTurns says why).
  const numbered = await numberTurns(db, tenantId, checkedTurns.unique);
  const mappedTraces = new Set(ready.keys());
  const agentSessions = new Set<string>();
  for (const r of records) if (r.agent_id) agentSessions.add(r.session_id);
  const ingested = await ingestRecords(services, tenantId, records, async (tx) => {
    // The spans' rows are this batch's traces' alone (claimed above). The turns are attributed to
    // their session's agent as they are inserted (and the sessions' earlier turns in the same
    // statement) and folded into the agent's rollups by ingest's one fold statement, with the
    // records: the agent's hot rollup rows are locked only from there to COMMIT, as for /v1/ingest
    // (folding them here held them through every later statement).
    const values = spanValues(tenantId, keep, mappedTraces, waited, agentSessions);
    const inserted = await insertNumberedTurns(tx, tenantId, numbered, { statement: insertTurnsAndSpans, values });
    return { turns: inserted.folds, sessionTurnsAttached: true };
  });
  if (++state.batches % PRUNE_EVERY === 0) await pruneTraceState(db);

  state.spansRejected += ingested.skipped;
  const recordSkips = skipsByExport(recordStarts, records.length, ingested.skipped_records);
  const turnSkips = skipsByExport(turnStarts, turns.length, checkedTurns.skipped);
  return group.map((e, i) => {
    const rejected = e.rejected + (recordSkips.counts[i] ?? 0);
    const reasons = [e.firstRejection, recordSkips.reasons[i], turnSkips.reasons[i]].filter(Boolean);
    return { rejectedSpans: rejected, errorMessage: reasons.length > 0 ? `${rejected} span(s) rejected: ${reasons.join("; ")}` : "" };
  });
}

/**
 * Skipped rows of a batch per export (exports' rows start at `starts`, the batch has `length` rows),
 * with each export's first reason; `skipped` lists every skipped row by index.
 */
export function skipsByExport(
  starts: readonly number[],
  length: number,
  skipped: readonly { index: number; reason: string }[],
): { counts: number[]; reasons: (string | undefined)[] } {
  const counts = starts.map(() => 0);
  const reasons: (string | undefined)[] = starts.map(() => undefined);
  for (const s of skipped) {
    let e = 0;
    while (e + 1 < starts.length && (starts[e + 1] ?? length) <= s.index) e++;
    counts[e] = (counts[e] ?? 0) + 1;
    reasons[e] ??= s.reason;
  }
  return { counts, reasons };
}

function projectOf(resource: Attrs): string | null {
  const v = resource["voxgate.project"];
  return typeof v === "string" && v !== "" ? v.slice(0, 256) : null;
}

function countUnmapped(state: OtlpState, name: string): void {
  const key = KNOWN_UNMAPPED.has(name) ? name : "other";
  state.spansUnmapped.set(key, (state.spansUnmapped.get(key) ?? 0) + 1);
}
