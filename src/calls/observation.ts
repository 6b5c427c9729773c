import { z } from "zod";
import { DomainError } from "../errors.js";
import { EPOCH_MS_MAX, EPOCH_MS_MIN, MAX_LEGS_PER_OBSERVATION } from "./limits.js";
import { type CallUpdate, LEG_KINDS } from "./model.js";
import { idString, textString } from "./strings.js";

/**
 * POST /v1/calls/observations: agent/loadgen reports with millisecond timestamps.
 * Strict at top level and per leg: an unknown field (loss, jitter, mos, is_probe, tenant_id…) is a 422
 * that names it. Fractional milliseconds are accepted and rounded.
 */
const epochMs = z
  .number()
  .finite()
  .min(EPOCH_MS_MIN, "must be epoch milliseconds (>= 1e12); a seconds-scale value is refused")
  .lt(EPOCH_MS_MAX, "must be epoch milliseconds (< 1e13); a microseconds-scale value is refused")
  .transform((n) => Math.round(n));

const legSchema = z
  .strictObject({
    participant_sid: idString.describe("required; 1–256 characters; distinct within `legs`"),
    identity: textString.optional().describe("participant identity, at most 1024 characters"),
    kind: z.enum(LEG_KINDS).optional().describe("participant kind: SIP, AGENT, STANDARD, INGRESS or EGRESS"),
    joined_at_ms: epochMs.optional().describe("epoch milliseconds (1e12 ≤ value < 1e13)"),
    left_at_ms: epochMs.optional().describe("epoch milliseconds; must be ≥ `joined_at_ms`; marks the leg DISCONNECTED"),
    disconnect_reason: idString.optional().describe("1–256 characters"),
    first_audio_track_at_ms: epochMs.optional().describe("epoch milliseconds"),
    audio_track_sid: idString.optional().describe("1–256 characters"),
    audio_codec: idString.optional().describe("1–256 characters"),
  })
  .refine((l) => l.joined_at_ms === undefined || l.left_at_ms === undefined || l.left_at_ms >= l.joined_at_ms, {
    message: "left_at_ms is before joined_at_ms",
    path: ["left_at_ms"],
  });

export const observationSchema = z
  .strictObject({
    origin: z.enum(["agent", "loadgen"]).describe("required: who observed the call"),
    room_sid: idString
      .optional()
      .describe("1–256 characters; `room_sid` or `attempt_id` is required (the call key is the room_sid when present)"),
    attempt_id: idString
      .optional()
      .describe("1–256 characters; alone, files the call under a synthetic per-tenant key `attempt:<tenant>:<attempt_id>`"),
    room_name: textString.optional().describe("at most 1024 characters"),
    run_id: idString.optional().describe("1–256 characters"),
    project: idString.optional().describe("1–256 characters"),
    agent_id: idString.optional().describe("1–256 characters"),
    started_at_ms: epochMs
      .optional()
      .describe("epoch milliseconds: finite, 1e12 ≤ value < 1e13; seconds- or microseconds-scale values are refused; fractions are rounded"),
    ended_at_ms: epochMs.optional().describe("epoch milliseconds; must be ≥ `started_at_ms`"),
    legs: z
      .array(legSchema)
      .max(MAX_LEGS_PER_OBSERVATION)
      .optional()
      .describe(`at most ${MAX_LEGS_PER_OBSERVATION} legs (MAX_LEGS_PER_OBSERVATION), with distinct participant_sids`),
  })
  .refine((o) => o.room_sid !== undefined || o.attempt_id !== undefined, {
    message: "room_sid or attempt_id is required",
    path: ["room_sid"],
  })
  .refine((o) => o.started_at_ms === undefined || o.ended_at_ms === undefined || o.ended_at_ms >= o.started_at_ms, {
    message: "ended_at_ms is before started_at_ms",
    path: ["ended_at_ms"],
  })
  .refine((o) => new Set((o.legs ?? []).map((l) => l.participant_sid)).size === (o.legs ?? []).length, {
    message: "participant_sid appears twice",
    path: ["legs"],
  })
  .describe(
    "Agent- or loadgen-side facts about a call. Strict: any other field, at the top level or in a leg, is a 422 naming it. Strings must not contain NUL or unpaired surrogates.",
  );
export type Observation = z.infer<typeof observationSchema>;

/** A validated report plus the tenant of the key that sent it: what the queue holds. */
export interface QueuedObservation {
  report: Observation;
  tenantId: string | null;
}

/**
 * The call key of a report: its room_sid, or (attempt_id only) a synthetic `attempt:<tenant>:<attempt_id>`
 * so two tenants' attempt ids never meet. A later report carrying the real room_sid files a separate row.
 */
export function callKeyOf(q: QueuedObservation): string {
  if (q.report.room_sid !== undefined) return q.report.room_sid;
  return `attempt:${q.tenantId ?? "-"}:${q.report.attempt_id ?? ""}`;
}

export function observationToUpdate(q: QueuedObservation): CallUpdate {
  const r = q.report;
  return {
    call: {
      roomSid: callKeyOf(q),
      roomName: r.room_name ?? null,
      tenantId: q.tenantId,
      origin: r.origin,
      project: r.project ?? null,
      agentId: r.agent_id ?? null,
      attemptId: r.attempt_id ?? null,
      runId: r.run_id ?? null,
      startedAtMs: r.started_at_ms ?? null,
      endedAtMs: r.ended_at_ms ?? null,
    },
    legs: (r.legs ?? []).map((l) => ({
      participantSid: l.participant_sid,
      identity: l.identity ?? null,
      kind: l.kind ?? null,
      joinedAtMs: l.joined_at_ms ?? null,
      leftAtMs: l.left_at_ms ?? null,
      state: l.left_at_ms !== undefined ? "DISCONNECTED" : null,
      disconnectReason: l.disconnect_reason ?? null,
      firstAudioTrackAtMs: l.first_audio_track_at_ms ?? null,
      audioTrackSid: l.audio_track_sid ?? null,
      audioCodec: l.audio_codec ?? null,
    })),
  };
}

/**
 * Validates a report, or throws the 422 envelope. An unknown field is reported under its own path
 * (`jitter`, `legs.0.mos`) so the answer names it, not only the object that holds it.
 */
export function parseObservation(body: unknown): Observation {
  const result = observationSchema.safeParse(body);
  if (result.success) return result.data;
  const details = result.error.issues.flatMap((issue) => {
    const at = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ path: [...at, key].join("."), message: "unknown field" }));
    }
    return [{ path: at.join("."), message: issue.message }];
  });
  const unknown = details.filter((d) => d.message === "unknown field").map((d) => d.path);
  const first = details[0];
  const message =
    unknown.length > 0
      ? `observation failed validation: unknown field${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`
      : first
        ? `observation failed validation: ${first.path || "(body)"}: ${first.message}`
        : "observation failed validation";
  throw new DomainError("validation_failed", message, details);
}
