import type { RateCardStore } from "../billing/rate-card-store.js";
import { rateRequest } from "../billing/rate.js";
import type { Modality } from "../config/schema.js";
import type { EffectiveProject } from "../manage/registry.js";
import type { BudgetGate } from "./budget-gate.js";
import type { FleetBudget } from "./budget-leases.js";
import type { Units, UpstreamTarget } from "./protocol.js";

/** Output tokens reserved for an LLM call that names no max_tokens / max_output_tokens. */
export const DEFAULT_RESERVED_OUTPUT_TOKENS = 1024;
/** Rough characters per token of a prompt: the reservation's input estimate, and a cut-off stream's input. */
const CHARS_PER_TOKEN = 4;
/** Bytes per second of audio assumed for an upload's reservation (a 128 kbit/s reading). */
const UPLOAD_BYTES_PER_SECOND = 16_000;

/** Spend held for a call or a stream's increment until its record is queued. */
export interface Hold {
  /** The estimated cost held (USD; 0 when the project has no block budget). */
  readonly amount: number;
  /** Gives the hold back: call it once the call's record is queued (its cost then counts as spend) or the call failed. Idempotent. */
  release(): void;
}

/** Nothing held (no `block` budget, or an unpriced model). */
export const NO_HOLD: Hold = { amount: 0, release() {} };

/**
 * Budgets as reservations: a call of a `block` project holds its estimated cost before it is
 * forwarded, and the hold is released when the call's record is queued (its recorded cost then counts
 * as spend in the budget gate, at the same instant) or the call fails. A hold is granted while the
 * project's spend plus what is held is under its budget, so on one replica the recorded spend never
 * passes the budget by more than one call's estimate (or one stream increment), whatever the
 * concurrency. `warn` and `throttle` projects hold nothing (they are decided on spend alone).
 *
 * Holds are this replica's: another replica sees them only once their records are written and its
 * budget refresh ran (see BudgetTracker's overshoot bound).
 */
export class BudgetReservations {
  private readonly held = new Map<string, number>();
  /** Set on a replica with the shared store: stream increments are claimed fleet-wide (budget-leases.ts). */
  fleet: FleetBudget | null = null;

  constructor(
    private readonly budgets: () => BudgetGate,
    private readonly rateCard: RateCardStore,
  ) {}

  /** What this replica holds for a project now. */
  heldFor(projectId: string): number {
    return this.held.get(projectId) ?? 0;
  }

  /**
   * What this replica holds for a project as the fleet must count it: its holds, and the cost of its
   * records not yet written (a released hold's record is queued; until written, the store's spend
   * does not show it).
   */
  holding(projectId: string): number {
    return this.heldFor(projectId) + this.budgets().unwritten(projectId);
  }

  /** Every project this replica holds anything for, with its holding (the fleet rows' figures). */
  holdings(): Map<string, number> {
    const out = new Map<string, number>();
    for (const id of new Set([...this.held.keys(), ...this.budgets().unwrittenProjects()])) {
      const usd = this.holding(id);
      if (usd > 0) out.set(id, usd);
    }
    return out;
  }

  /**
   * A stream's next increment: `units` of `target` held for a `block` project while the project's
   * spend plus every holding is under its budget, claimed fleet-wide when this replica shares the
   * store (one database round trip: streams claim ahead of need, never per frame); null when refused.
   */
  async reserveAhead(project: EffectiveProject | undefined, target: UpstreamTarget, units: Units, tenantId: string | null): Promise<Hold | null> {
    const fleet = this.fleet;
    if (!fleet || !project || project.dailyBudget === null || project.budgetAction !== "block") return this.reserve(project, target, units, tenantId);
    if (this.budgets().spend(project.id) + this.heldFor(project.id) >= project.dailyBudget) return null;
    const amount = this.price(target, units, tenantId);
    if (amount === 0) return NO_HOLD;
    let hold: Hold | null = null;
    const ok = await fleet.claim(project.id, project.dailyBudget, () => this.holding(project.id), () => {
      hold = this.take(project.id, amount);
    });
    if (!ok) (hold as Hold | null)?.release();
    return ok ? hold : null;
  }

  /**
   * Holds `units` of `target` at the model's rated price for a project, or null when the project's
   * `block` budget has no room left (spend + holds ≥ daily_budget).
   */
  reserve(project: EffectiveProject | undefined, target: UpstreamTarget, units: Units, tenantId: string | null): Hold | null {
    if (!project || project.dailyBudget === null || project.budgetAction !== "block") return NO_HOLD;
    const held = this.heldFor(project.id);
    if (this.budgets().spend(project.id) + held >= project.dailyBudget) return null;
    const amount = this.price(target, units, tenantId);
    if (amount === 0) return NO_HOLD;
    return this.take(project.id, amount);
  }

  private take(projectId: string, amount: number): Hold {
    this.held.set(projectId, this.heldFor(projectId) + amount);
    let released = false;
    return {
      amount,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.held.get(projectId) ?? 0) - amount;
        if (left > 1e-12) this.held.set(projectId, left);
        else this.held.delete(projectId);
      },
    };
  }

  /** The provider cost of `units` on `target`, rated as ingest will rate the record (0 when unpriced). */
  price(target: UpstreamTarget, units: Units, tenantId: string | null): number {
    const { card, catalog } = this.rateCard.snapshot();
    const rating = rateRequest(
      {
        modality: target.modality,
        modelId: target.modelId,
        provider: target.providerId,
        tenantId,
        status: "success",
        inputTokens: units.inputTokens ?? null,
        outputTokens: units.outputTokens ?? null,
        cachedInputTokens: units.cachedInputTokens ?? null,
        inputAudioTokens: units.inputAudioTokens ?? null,
        outputAudioTokens: units.outputAudioTokens ?? null,
        audioSeconds: units.audioSeconds ?? null,
        characters: units.characters ?? null,
        costUsd: null,
      },
      card,
      catalog,
    );
    return rating.costUsd ?? 0;
  }
}

/** Input tokens of a prompt of `chars` characters, as estimated when the vendor's usage is not (yet) known. */
export function promptTokensEstimate(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/**
 * The estimate of a call whose protocol gave none: an LLM call its body's characters ÷ 4 in and the
 * default output; a TTS call its body's length in characters; an STT upload its bytes at 128 kbit/s.
 */
export function defaultEstimate(modality: Modality, bodyBytes: number): Units {
  if (modality === "llm") return { inputTokens: promptTokensEstimate(bodyBytes), outputTokens: DEFAULT_RESERVED_OUTPUT_TOKENS };
  if (modality === "tts") return { characters: bodyBytes };
  return { audioSeconds: bodyBytes / UPLOAD_BYTES_PER_SECOND };
}
