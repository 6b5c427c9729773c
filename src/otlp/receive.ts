import { type IngestDeps, ingestRecords } from "../ingest/ingest-requests.js";
import { checkTurns, insertNumberedTurns, numberTurns, turnsResult } from "../ingest/turns.js";
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

/** What the receiver writes with: ingest's inputs, and the yaml sections that name a Node agent's STT model. */
export type OtlpDeps = IngestDeps & { config: SttModelConfig };

/** Export batches in flight at once; one more is answered 429 with Retry-After (the exporter backs off). */
export const MAX_CONCURRENT_EXPORTS = 8;
/** Exports written at once (each holds a pooled connection): as many as /v1/ingest's four writers. */
export const MAX_CONCURRENT_WRITES = 4;
/**
 * How long the spans of a trace that names no session (no gen_ai.conversation.id or lk.job_id yet)
 * wait before the trace id becomes its session. Node agents in a job name it on the first LLM
 * request; Python agents and sessions outside a job only on the session span sent at close.
 */
export const OTLP_SESSION_WAIT_MS = 15 * 60_000;
/** Pairing state is pruned about once per this many export batches. */
const PRUNE_EVERY = 500;

/** Per-process receiver state: counters for /v1/metrics and the write-path gate. */
export interface OtlpState {
  inFlight: number;
  batches: number;
  spansReceived: number;
  spansUnmapped: Map<string, number>;
  spansRejected: number;
  /** Per trace id, the last export that claimed it: exports of one trace run one after the other (see receiveTraces). */
  traceTails: Map<string, Promise<void>>;
  /** Exports holding a write slot (at most MAX_CONCURRENT_WRITES), and those waiting for one. */
  writers: number;
  slotWaiters: (() => void)[];
}

const states = new WeakMap<object, OtlpState>();

/** The receiver state of one Services (one app); created on first use. */
export function otlpState(services: object): OtlpState {
  let s = states.get(services);
  if (!s) {
    s = { inFlight: 0, batches: 0, spansReceived: 0, spansUnmapped: new Map(), spansRejected: 0, traceTails: new Map(), writers: 0, slotWaiters: [] };
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
  records: number;
  turns: number;
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
  if (byTrace.size === 0) return { rejectedSpans: decoded.rejected, errorMessage: decoded.firstRejection ?? "", records: 0, turns: 0 };

  // Exports are written concurrently (up to MAX_CONCURRENT_WRITES), but two exports naming the same
  // trace run one after the other: each reads the trace's stored spans, maps them with its own and
  // stores its spans, so a turn split over two concurrent exports would otherwise be seen by neither
  // (and their session rows, turns and otlp_spans rows would be locked by both). The trace ids are
  // claimed all at once, synchronously, so an export only ever waits for exports that claimed before
  // it: no cycle. A write slot is taken only after the traces are claimed, so a slot holder never
  // waits for a trace. Exports of different traces share only rows every writer takes in one order
  // (docs/architecture.md, "Ingest's lock order": requests by id, sessions by id, agent versions,
  // turns by (session, turn_index), per-agent rollups, request rollups,
  // billing usage, by key), so they wait for each other instead of deadlocking; a deadlock that
  // still happens (another writer of the same session) is retried whole (withRetry).
  const release = await claimTraces(state, [...byTrace.keys()]);
  try {
    await takeSlot(state);
    try {
      return await writeBatch(services, state, tenantId, byTrace, decoded);
    } finally {
      freeSlot(state);
    }
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

async function takeSlot(state: OtlpState): Promise<void> {
  if (state.writers < MAX_CONCURRENT_WRITES) {
    state.writers++;
    return;
  }
  // The slot is handed over by freeSlot: writers stays counted.
  await new Promise<void>((resolve) => state.slotWaiters.push(resolve));
}

function freeSlot(state: OtlpState): void {
  const next = state.slotWaiters.shift();
  if (next) next();
  else state.writers--;
}

async function writeBatch(
  services: OtlpDeps,
  state: OtlpState,
  tenantId: string | null,
  byTrace: Map<string, { fresh: FreshSpan[]; resource: Attrs }>,
  decoded: DecodedRequest,
): Promise<ExportOutcome> {
  const db = services.database.db;
  const now = Date.now();
  // Traces this export may be the first to see and can name (a span names the session or closes
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
    const seen = identityOf(traceId, [...earlier, ...t.fresh], t.resource);
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
  // Mapped traces with spans that waited for their session (stored unmapped): they are mapped now.
  const waited = new Set<string>();
  for (const [traceId, t] of byTrace) {
    const earlier = stored.spans.get(traceId) ?? [];
    const storedIds = new Set(earlier.map((s) => s.spanId));
    const novel = t.fresh.filter((s) => !storedIds.has(s.spanId)); // a re-sent span is stored already
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
      fresh: [...earlier.filter((s) => !s.mapped), ...novel],
    });
    records.push(...mapped.records);
    turns.push(...mapped.turns);
  }
  resolveSttModels(records, services.config);
  // One transaction for the whole export: records (with their sessions and rollups), turns and the
  // kept spans. Three transactions per batch held the session and rollup locks three times over.
  const checkedTurns = checkTurns(turns);
  // Seqs taken before the transaction (numberTurns says why).
  const numbered = await numberTurns(db, tenantId, checkedTurns.unique);
  let turnsAccepted = 0;
  const mappedTraces = new Set(ready.keys());
  const ingested = await ingestRecords(services, tenantId, records, async (tx) => {
    // The spans' rows are this export's traces' alone (claimed above). The turns are attributed to
    // their session's agent as they are inserted and folded into the agent's rollups by ingest's one
    // fold statement, with the records: the agent's hot rollup rows are locked only from there to
    // COMMIT, as for /v1/ingest (folding them here held them through every later statement).
    const inserted = await insertNumberedTurns(tx, tenantId, numbered, { statement: insertTurnsAndSpans, values: spanValues(tenantId, keep, mappedTraces, waited) });
    turnsAccepted = inserted.accepted;
    return { turns: inserted.folds };
  });
  const timeline = turns.length > 0 ? turnsResult(checkedTurns, turnsAccepted) : null;
  if (++state.batches % PRUNE_EVERY === 0) await pruneTraceState(db);

  const skipped = ingested.skipped;
  state.spansRejected += skipped;
  const reasons = [decoded.firstRejection, ingested.skipped_records[0]?.reason, timeline?.skipped_rows[0]?.reason].filter(Boolean);
  return {
    rejectedSpans: decoded.rejected + skipped,
    errorMessage: reasons.length > 0 ? `${decoded.rejected + skipped} span(s) rejected: ${reasons.join("; ")}` : "",
    records: ingested.accepted,
    turns: timeline?.accepted ?? 0,
  };
}

function projectOf(resource: Attrs): string | null {
  const v = resource["voxgate.project"];
  return typeof v === "string" && v !== "" ? v.slice(0, 256) : null;
}

function countUnmapped(state: OtlpState, name: string): void {
  const key = KNOWN_UNMAPPED.has(name) ? name : "other";
  state.spansUnmapped.set(key, (state.spansUnmapped.get(key) ?? 0) + 1);
}
