/**
 * The OTLP receiver's admission: how many exports may be in flight at once and how many bytes of
 * bodies they may hold. Pure bookkeeping over the receiver's counters (src/otlp/receive.ts, OtlpState);
 * src/otlp/routes.ts admits, grows and releases each export.
 */

/** The receiver's counters of what is in flight. */
export interface ExportGate {
  inFlight: number;
  /** Bytes of bodies the exports in flight hold (admitExport, growExport). */
  inFlightBytes: number;
}

/**
 * Export batches in flight at once (read, decoded, waiting for a writer or written); one more is
 * answered 429 with Retry-After (the exporter backs off). A fleet runs one BatchSpanProcessor per
 * agent process, each with one export in flight: exports that wait together are written as one
 * batch (src/otlp/write-queue.ts), so more of them waiting makes each cheaper (bench:otlp, 512-span
 * exports: ~10 ms of CPU each at 4 in flight, ~8 ms at 32; docs/perf/ingest.md). It was 8, which
 * turned a ninth agent process away for a second however idle the writers were.
 */
export const MAX_CONCURRENT_EXPORTS = 64;
/**
 * Bytes of bodies the exports in flight may hold at once, in units of the body limit: the memory
 * they may hold is what it was when 8 exports were the limit. An export's hold grows to the size its
 * body will have as soon as that is known (readBodyBytes: a declared Content-Length before a byte is
 * read, so an export that cannot fit is refused unread; a chunked or compressed body as it is read or
 * inflated); an export that would pass the budget is answered 429. See ExportHold.
 */
export const IN_FLIGHT_BODY_LIMITS = 8;

/** What one admitted export holds of the receiver's budget, until released. */
export interface ExportHold {
  bytes: number;
}

/** Admits an export, holding nothing yet (growExport), or answers null (answer 429). Counted in `state` until `releaseExport`. */
export function admitExport(state: ExportGate): ExportHold | null {
  if (state.inFlight >= MAX_CONCURRENT_EXPORTS) return null;
  state.inFlight++;
  return { bytes: 0 };
}

/** The export's body will hold `bytes` (declared, read or inflated): its hold grows to it, or false when the budget has no room (answer 429). `bodyLimit`: serve.body_limit_bytes. */
export function growExport(state: ExportGate, hold: ExportHold, bytes: number, bodyLimit: number): boolean {
  if (bytes <= hold.bytes) return true;
  if (state.inFlightBytes + (bytes - hold.bytes) > IN_FLIGHT_BODY_LIMITS * bodyLimit) return false;
  state.inFlightBytes += bytes - hold.bytes;
  hold.bytes = bytes;
  return true;
}

export function releaseExport(state: ExportGate, hold: ExportHold): void {
  state.inFlight--;
  state.inFlightBytes -= hold.bytes;
}
