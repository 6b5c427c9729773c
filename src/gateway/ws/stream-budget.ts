import { randomUUID } from "node:crypto";
import { type CallContext, recordAttempt } from "../attempt.js";
import { DEFAULT_RESERVED_OUTPUT_TOKENS, type Hold } from "../budget-reservations.js";
import type { EffectiveProject } from "../../manage/registry.js";
import type { Units, UpstreamTarget } from "../protocol.js";
import type { WsCall } from "./call.js";
import type { StreamSession, StreamSpendHook } from "./session.js";
import { CLOSE_BUDGET } from "./streams.js";

/** What one increment counts: seconds of audio (STT), characters (TTS), or responses (realtime conversations). */
type Measure = "audioSeconds" | "characters" | "responses";

/** The record's error when a stream ends on its budget. */
export const BUDGET_ENDED = "budget_exceeded: the project's daily budget is spent (budget_action block)";

/**
 * A stream's spend governed while it runs (a StreamSpendHook), for a project with a daily budget:
 * - `block`: the stream holds one increment ahead (gateway.streams.reserve_seconds of audio,
 *   reserve_characters to speak, or one response's estimate) at the model's rated price, claimed
 *   fleet-wide (BudgetReservations.reserveAhead). The first is held before the stream opens; the next
 *   is claimed while the current one runs, so a frame never waits for the store. When the units pass
 *   what is held, the stream is checkpointed (its increments recorded, their holds released: the
 *   recorded spend replaces them) and the next increment is taken; when none was granted, the
 *   vendor's in-band error, then close 1008 `budget_exceeded`, recorded so.
 * - `warn` / `throttle`: the budget is looked at once per increment (a warn line when it is over; a
 *   running stream keeps its vendor socket, so throttle applies from the next stream).
 * Per frame: one number compare (the frame's units against what is held).
 */
export class StreamBudget implements StreamSpendHook {
  private covered: number;
  private used = 0;
  private readonly holds: Hold[] = [];
  /** The next increment: pending while claimed, then the hold (null: refused). */
  private next: Promise<void> | null = null;
  private nextHold: Hold | null | undefined = undefined;
  private ended = false;
  private warned = false;

  constructor(
    private readonly call: WsCall,
    private readonly ctx: CallContext,
    private readonly project: EffectiveProject,
    private readonly target: UpstreamTarget,
    private readonly measure: Measure,
    private readonly step: number,
    private readonly estimate: Units,
    first: Hold | null,
  ) {
    this.covered = step;
    if (first) {
      this.holds.push(first);
      this.claimNext();
    }
  }

  private get blocking(): boolean {
    return this.project.budgetAction === "block";
  }

  private claimNext(): void {
    if (this.next || this.ended) return;
    this.nextHold = undefined;
    const gw = this.call.gw;
    this.next = gw.reservations.reserveAhead(this.project, this.target, this.estimate, this.call.caller.auth.tenantId).then((h) => {
      this.next = null;
      // A stream that ended while its claim was out gives the hold straight back.
      if (this.ended) h?.release();
      else this.nextHold = h;
    });
  }

  beforeWork(session: StreamSession, units: Units): boolean {
    if (this.ended) return false;
    const used = this.measure === "responses" ? ++this.used : (units[this.measure] ?? 0);
    if (used <= this.covered) return true;
    return this.advance(session);
  }

  /** The units passed what is held: settle, take the next increment, or end the stream. */
  private advance(session: StreamSession): boolean {
    if (!this.blocking) {
      this.covered += this.step;
      this.watch();
      return true;
    }
    // The claim is still out (an increment used up within one store round trip): let the frame pass.
    if (this.nextHold === undefined) return true;
    const hold = this.nextHold;
    if (hold === null) return this.refuse(session);
    // Settle: what was served so far is recorded now, and its holds give way to the recorded spend.
    if (this.measure !== "responses") {
      session.checkpoint();
      for (const h of this.holds.splice(0)) h.release();
    }
    this.holds.push(hold);
    this.covered += this.step;
    this.claimNext();
    return true;
  }

  private refuse(session: StreamSession): boolean {
    this.ended = true;
    const message = `project ${this.project.id} has reached its daily budget`;
    session.fail(BUDGET_ENDED);
    const route = this.call.route;
    const inBand = route.inBand?.error(null, "budget_exceeded", message) ?? route.errorFrame?.("budget_exceeded", message) ?? null;
    const end = () => {
      if (inBand !== null) session.sendToClient(inBand);
      session.end(CLOSE_BUDGET.code, CLOSE_BUDGET.reason);
    };
    // An audio or text frame that found no room still goes on (it is metered: units stay what the
    // vendor served); a response that found none is never asked for.
    if (this.measure === "responses") {
      // The response never asked for is recorded as refused (the session writes no row of its own).
      const ctx: CallContext = { ...this.ctx, startedAt: Date.now(), t0: performance.now() };
      recordAttempt(ctx, { id: randomUUID(), target: this.target, status: "error", error: BUDGET_ENDED, units: {}, metadata: { stream_id: this.call.requestId } });
      end();
      return false;
    }
    queueMicrotask(end);
    return true;
  }

  private watch(): void {
    const decision = this.call.gw.budgets.decide(this.project);
    if (decision === "ok" || this.warned) return;
    this.warned = true;
    this.call.gw.log.warn({ project: this.project.id, spend: this.call.gw.budgets.spend(this.project.id), budget_action: decision }, "stream over its project's daily budget: served");
  }

  /** Gives back everything held (the stream ended, or never opened). */
  release(): void {
    this.ended = true;
    for (const h of this.holds.splice(0)) h.release();
    this.nextHold?.release();
    this.nextHold = undefined;
  }

  served(_session: StreamSession, _units: Units, final: boolean): void {
    if (final) this.release();
    // A realtime response was recorded: its hold (the oldest) gives way to its recorded cost.
    else if (this.measure === "responses") this.holds.shift()?.release();
  }
}

/** One increment of a stream of this target: what it counts, its size, and the units priced for it. */
function incrementOf(call: WsCall, target: UpstreamTarget): { measure: Measure; step: number; estimate: Units } {
  const limits = call.gw.streams.limits;
  if (target.modality === "tts") return { measure: "characters", step: limits.reserveCharacters, estimate: { characters: limits.reserveCharacters } };
  if (target.modality === "llm") {
    // One response's estimate: the default output in and out, priced as audio (the dearer rate).
    const n = DEFAULT_RESERVED_OUTPUT_TOKENS;
    return { measure: "responses", step: 1, estimate: { inputTokens: n, inputAudioTokens: n, outputTokens: n, outputAudioTokens: n } };
  }
  return { measure: "audioSeconds", step: limits.reserveSeconds, estimate: { audioSeconds: limits.reserveSeconds } };
}

/**
 * The budget hook of a stream about to open on `target` (the primary of its plan), or null when its
 * project has no daily budget. A `block` project holds its first increment here, before any vendor
 * is contacted: "refused" when there is no room (recorded as a refusal, like the upgrade's 402).
 */
export async function openStreamBudget(call: WsCall, target: UpstreamTarget, ctx: CallContext): Promise<StreamBudget | null | "refused"> {
  const project = call.gw.table.projects.get(call.caller.attribution.project);
  if (!project || project.dailyBudget === null) return null;
  const inc = incrementOf(call, target);
  if (project.budgetAction !== "block") return new StreamBudget(call, ctx, project, target, inc.measure, inc.step, inc.estimate, null);
  const first = await call.gw.reservations.reserveAhead(project, target, inc.estimate, call.caller.auth.tenantId);
  if (!first) {
    recordAttempt(ctx, { id: call.requestId, target, status: "error", error: BUDGET_ENDED, units: {} });
    return "refused";
  }
  return new StreamBudget(call, ctx, project, target, inc.measure, inc.step, inc.estimate, first);
}
