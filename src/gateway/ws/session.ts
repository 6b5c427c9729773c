import { randomUUID } from "node:crypto";
import type { WebSocket } from "ws";
import type { TypedRecord } from "../../ingest/records.js";
import { type Attempt, type CallContext, queueRecord, recordAttempt } from "../attempt.js";
import type { Units } from "../protocol.js";
import type { Leg, LegObserver } from "../failover/switching-upstream.js";
import { type RelayHandle, type RelaySummary, relay, type StreamLine, type StreamMeter, type UpstreamSocket } from "./relay.js";
import { isResponseMeter, recordResponses } from "./responses.js";
import type { GovernedStream, StreamSlot } from "./streams.js";

/**
 * The hook where a stream's spend is governed while it runs: `beforeWork` sees the stream's units
 * each time a client frame asks the vendor for more work (the frame is already metered and not yet
 * sent: false keeps it from the vendor and the hook ends the stream through `session.end`); `served`
 * sees the units recorded so far at each checkpoint and at the end.
 */
export interface StreamSpendHook {
  beforeWork?(session: StreamSession, units: Units): boolean;
  served?(session: StreamSession, units: Units, final: boolean): void;
}

export interface SessionRelay {
  meter: StreamMeter;
  checkpointMs: number;
  clientText?: ((frame: string) => string | null) | null;
  queued?: ReadonlyArray<{ frame: Buffer; isBinary: boolean }>;
  /** A stream that fails over mid-call (live STT, TTS generations): each leg is its own record of the one stream. */
  legs?: { readonly current: Leg; observer: LegObserver | null } | null;
  /** Runs once the stream has ended and its record is queued (the provider's stream slot is freed here). */
  onEnd?(summary: RelaySummary): void;
}

/** Why a governed end is recorded: what the record's error_message / metadata.ended_by say. */
function endNote(s: RelaySummary): { error?: string; endedBy?: string } {
  if (s.endedBy === "upstream_error") return { error: "upstream connection lost mid-stream" };
  // A vendor's internal-error close (Deepgram's NET-0001 and its kin) fails the stream with its reason.
  if (s.endedBy === "upstream" && s.closeCode === 1011) return { error: s.reason || "the vendor closed the stream with 1011 (internal error)" };
  if (s.endedBy === "stalled") return { error: "relay buffer full: a side stopped reading" };
  if (s.endedBy === "governed") return { endedBy: s.reason };
  return {};
}

/**
 * One governed gateway WebSocket, from the accepted client socket to its record: it holds the key's
 * stream slot (released at the end), is watched by the stream registry (idle, max duration, the key
 * revoked), relays to the vendor's socket once one is open, and records the stream (checkpoints
 * while it runs, the rest at its end). `hooks` are the per-stream spend hooks (see StreamSpendHook).
 */
export class StreamSession implements GovernedStream {
  readonly hooks: StreamSpendHook[] = [];
  private handle: RelayHandle | null = null;
  private closed = false;
  /** Why the gateway failed the stream (a spend hook's end): the record's status and error_message. */
  private failure: string | null = null;
  /** Records the units served so far as a checkpoint row (unit streams; a no-op before relaying). */
  private settle: () => void = () => {};

  constructor(
    readonly client: WebSocket,
    private readonly slot: StreamSlot,
  ) {
    slot.attach(this);
    // Until a vendor socket is open (a model named in a message), the client's leaving ends the session.
    client.once("close", () => {
      if (!this.handle) this.finish();
    });
  }

  frames(): number {
    return this.handle?.frames() ?? 0;
  }

  /** Ends the stream from the gateway's side: the client gets code/reason, the vendor a normal close. */
  end(code: number, reason: string): void {
    if (this.handle) this.handle.end(code, reason);
    else {
      if (this.client.readyState === this.client.OPEN) this.client.close(code, reason);
      this.finish();
    }
  }

  /** A text frame of the gateway's own to the client (an in-band error in the vendor's shape). */
  sendToClient(text: string): void {
    if (this.handle) this.handle.sendToClient(text);
    else if (this.client.readyState === this.client.OPEN) this.client.send(text);
  }

  /** Marks the stream failed by the gateway (recorded `error` with this message when it ends). */
  fail(error: string): void {
    this.failure ??= error;
  }

  /** Writes a checkpoint row with the units served since the last one (a spend hook settling an increment). */
  checkpoint(): void {
    this.settle();
  }

  get relaying(): boolean {
    return this.handle !== null;
  }

  /** Relays the client to an open vendor socket; the attempt is recorded when the stream ends. */
  relayTo(upstream: UpstreamSocket, ctx: CallContext, attempt: Attempt, opts: SessionRelay): void {
    let recorder = new StreamRecorder(ctx, attempt);
    const legs = opts.legs ?? null;
    if (legs) {
      legs.observer = {
        // The failed leg is recorded with what it was sent; the next records under the same stream.
        switched: (failed, next) => {
          recorder.end(failed.meter.units());
          // Generations the failed vendor failed after their first audio: their own error rows.
          for (const line of failed.meter.lines?.() ?? []) recorder.line(line);
          next.attempt.metadata = { ...next.attempt.metadata, stream_id: attempt.id };
          recorder = new StreamRecorder(ctx, next.attempt, attempt.id);
        },
        gap: (leg, ms) => {
          leg.attempt.metadata = { ...leg.attempt.metadata, failover_gap_ms: Math.round(ms * 100) / 100 };
        },
      };
    }
    // The current leg's own units (a stream without legs: the stream's).
    const legUnits = (units: Units) => (legs ? legs.current.meter.units() : units);
    // A realtime conversation is recorded per response as each ends, not per stream (no checkpoints).
    const responses = isResponseMeter(opts.meter) ? recordResponses(opts.meter, ctx, attempt) : null;
    const limits = ctx.gw.streams.limits;
    const hooks = this.hooks;
    const m = opts.meter;
    if (isResponseMeter(m)) {
      // Each recorded response is one settled unit of work for the spend hooks.
      const record = m.onResponse;
      if (record && hooks.length > 0) {
        m.onResponse = (w) => {
          record(w);
          for (const h of hooks) h.served?.(this, w.units, false);
        };
      }
    } else this.settle = () => recorder.checkpoint(legUnits(opts.meter.units()));
    this.handle = relay(this.client, upstream, {
      meter: opts.meter,
      checkpointMs: opts.checkpointMs,
      // A realtime conversation's hooks hear of each recorded response instead (above).
      onCheckpoint: responses
        ? undefined
        : (units) => {
            recorder.checkpoint(legUnits(units));
            for (const h of hooks) h.served?.(this, units, false);
          },
      clientText: opts.clientText ?? null,
      queued: opts.queued,
      maxBufferedBytes: limits.maxBufferedBytes,
      stallMs: limits.stallMs,
      onWork: hooks.length === 0 ? null : () => hooks.every((h) => h.beforeWork?.(this, opts.meter.units()) ?? true),
      onEnd: (s) => {
        const last = legs ? legs.current : null;
        const ending = last ? last.attempt : attempt;
        if (ending === attempt) ending.ttfbMs = s.ttfbMs;
        const note = endNote(s);
        if (this.failure) {
          ending.status = "error";
          ending.error = this.failure;
        }
        // The vendor's own in-band error wins over how the socket ended.
        const error = (last ? last.meter : opts.meter).error?.() ?? note.error;
        if (error) {
          ending.status = "error";
          ending.error ??= error;
        }
        if (note.endedBy) ending.metadata = { ...ending.metadata, ended_by: note.endedBy };
        if (ending.error) ending.status = "error";
        if (responses) responses.end();
        else recorder.end(legUnits(s.units));
        for (const line of opts.meter.lines?.() ?? []) recorder.line(line);
        for (const h of hooks) h.served?.(this, s.units, true);
        this.finish();
        opts.onEnd?.(s);
      },
    });
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.slot.release();
  }
}

function minus(total: Units, done: Units): Units {
  const out: Units = {};
  for (const k of ["inputTokens", "outputTokens", "cachedInputTokens", "audioSeconds", "billedSeconds", "characters"] as const) {
    const t = total[k];
    if (t !== undefined) out[k] = Math.max(0, t - (done[k] ?? 0));
  }
  return out;
}

/**
 * Records one stream: every checkpoint writes a row with the units since the last one (so the
 * project's today_spend, and with it a budget, moves while a long call runs), and the end writes the
 * rest under the call's request id. The rows share metadata.stream_id; their units sum to the stream's.
 */
export class StreamRecorder {
  private done: Units = {};
  private checkpoints = 0;
  constructor(
    private readonly ctx: CallContext,
    private readonly attempt: Attempt,
    /** The stream the rows belong to (a later failover leg's: the stream's first attempt). */
    private readonly streamId: string = attempt.id,
  ) {}

  checkpoint(total: Units): void {
    const units = minus(total, this.done);
    // Nothing served since the last row (a hook settled an increment just before the timer's turn).
    if (Object.values(units).every((v) => v === 0)) return;
    this.done = { ...total };
    this.checkpoints++;
    const t = this.attempt.target;
    const record: TypedRecord = {
      id: randomUUID(),
      timestamp: Date.now(),
      modality: t.modality,
      model_id: t.modelId,
      provider: t.providerId,
      status: this.attempt.status === "fallback" ? "fallback" : "success",
      project: this.ctx.attribution.project,
      metadata: {
        via: "gateway",
        stream_id: this.streamId,
        checkpoint: this.checkpoints,
        ...(units.billedSeconds !== undefined && { billed_seconds: units.billedSeconds }),
      },
      ...(this.attempt.fallbackFrom && { fallback_from: this.attempt.fallbackFrom }),
      ...(this.ctx.attribution.sessionId !== null && { session_id: this.ctx.attribution.sessionId }),
      ...(units.audioSeconds !== undefined && { audio_seconds: units.audioSeconds }),
      ...(units.characters !== undefined && { characters: units.characters }),
      ...(units.inputTokens !== undefined && { input_tokens: units.inputTokens }),
      ...(units.outputTokens !== undefined && { output_tokens: units.outputTokens }),
    };
    queueRecord(this.ctx, record, t);
  }

  end(total: Units): void {
    this.attempt.units = minus(total, this.done);
    recordAttempt(this.ctx, this.attempt);
  }

  /** A line beside the stream's own (another model's generations, a failed generation): its own row. */
  line(l: StreamLine): void {
    recordAttempt(this.ctx, {
      id: randomUUID(),
      target: l.target,
      status: l.status,
      ...(l.error && { error: l.error }),
      units: l.units,
      metadata: { stream_id: this.streamId },
    });
  }
}
