/**
 * The one normalized shape both writers produce: the webhook (from a LiveKit event) and the
 * observation flusher (from an agent/loadgen report). src/calls/upsert.ts writes it.
 */

export const LEG_KINDS = ["SIP", "AGENT", "STANDARD", "INGRESS", "EGRESS"] as const;

export interface CallFacts {
  roomSid: string;
  roomName?: string | null;
  /** Tenant that owns the call; null for webhook-created calls (the media server has no tenant). */
  tenantId: string | null;
  /** webhook | agent | loadgen */
  origin: "webhook" | "agent" | "loadgen";
  project?: string | null;
  agentId?: string | null;
  attemptId?: string | null;
  runId?: string | null;
  startedAtMs?: number | null;
  endedAtMs?: number | null;
}

export interface LegFacts {
  participantSid: string;
  identity?: string | null;
  /** LiveKit ParticipantInfo.Kind name (SIP, AGENT, STANDARD, …); null when the source did not say. */
  kind?: string | null;
  state?: string | null;
  joinedAtMs?: number | null;
  leftAtMs?: number | null;
  disconnectReason?: string | null;
  firstAudioTrackAtMs?: number | null;
  audioTrackSid?: string | null;
  audioCodec?: string | null;
  attributes?: Record<string, string> | null;
}

export interface CallEventFacts {
  eventId: string;
  event: string;
  participantSid?: string | null;
  trackSid?: string | null;
  createdAtS?: number | null;
  payload: unknown;
}

/** One write: the call row, its legs, and (webhook only) the raw event that makes replays no-ops. */
export interface CallUpdate {
  call: CallFacts;
  legs: LegFacts[];
  event?: CallEventFacts;
}
