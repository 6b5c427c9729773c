import { z } from "zod";
import { EPOCH_MS_MAX, MAX_ATTRIBUTES, WEBHOOK_SECONDS_MAX } from "./limits.js";
import type { CallUpdate, LegFacts } from "./model.js";
import { idString, textString } from "./strings.js";

/**
 * A LiveKit WebhookEvent in protobuf-JSON (camelCase). int64 fields arrive as strings, zero values are
 * omitted (no `kind` = STANDARD, no `disconnectReason` = UNKNOWN_REASON), unknown fields are ignored
 * (newer servers add some). Only the fields Voxgate records are validated.
 */

/** An int64 as protobuf-JSON sends it (a decimal string) or as a plain JSON number, below `max`. */
const int64 = (max: number) =>
  z
    .union([z.string().regex(/^\d{1,19}$/), z.number().int().nonnegative()])
    .transform((v) => Number(v))
    .refine((n) => n < max, `must be below ${max}`);
const seconds = int64(WEBHOOK_SECONDS_MAX);
const millis = int64(EPOCH_MS_MAX);

const roomSchema = z.looseObject({
  sid: idString.optional(),
  name: textString.optional(),
  creationTime: seconds.optional(),
  creationTimeMs: millis.optional(),
});

const participantSchema = z.looseObject({
  sid: idString,
  identity: textString.optional(),
  state: textString.optional(),
  kind: textString.optional(),
  joinedAt: seconds.optional(),
  joinedAtMs: millis.optional(),
  disconnectReason: textString.optional(),
  attributes: z
    .record(textString, textString)
    .refine((a) => Object.keys(a).length <= MAX_ATTRIBUTES, `at most ${MAX_ATTRIBUTES} attributes`)
    .optional(),
});

const trackSchema = z.looseObject({
  sid: idString.optional(),
  type: textString.optional(),
  mimeType: textString.optional(),
  source: textString.optional(),
});

/** What every event must carry, checked before deciding whether it is one we record. */
export const webhookEnvelopeSchema = z.looseObject({ event: z.string().min(1).max(100), id: idString });

export const webhookEventSchema = z.looseObject({
  event: z.string().min(1).max(100),
  id: idString,
  createdAt: seconds.optional(),
  room: roomSchema.optional(),
  participant: participantSchema.optional(),
  track: trackSchema.optional(),
});
export type WebhookEvent = z.infer<typeof webhookEventSchema>;

export const ROOM_EVENTS = ["room_started", "room_finished"] as const;
export const PARTICIPANT_EVENTS = ["participant_joined", "participant_left", "participant_connection_aborted"] as const;
export const TRACK_EVENTS = ["track_published", "track_unpublished"] as const;
const RECORDED = new Set<string>([...ROOM_EVENTS, ...PARTICIPANT_EVENTS, ...TRACK_EVENTS]);

/** True for the events that are recorded; egress_*, ingress_* and anything newer are accepted and ignored. */
export function isRecordedEvent(event: string): boolean {
  return RECORDED.has(event);
}

/** What an event missing a field it needs is told (422). */
export class WebhookShapeError extends Error {}

/** Converts a recorded event into the shared CallUpdate (times normalised to epoch ms). */
export function webhookToUpdate(e: WebhookEvent, payload: unknown): CallUpdate {
  const roomSid = e.room?.sid;
  if (!roomSid) throw new WebhookShapeError(`${e.event} without room.sid`);
  const eventMs = e.createdAt !== undefined ? e.createdAt * 1000 : null;
  const roomStartMs = e.room?.creationTimeMs ?? secondsToMs(e.room?.creationTime);

  const update: CallUpdate = {
    call: {
      roomSid,
      roomName: e.room?.name ?? null,
      tenantId: null,
      origin: "webhook",
      startedAtMs: roomStartMs ?? (e.event === "room_started" ? eventMs : null),
      endedAtMs: e.event === "room_finished" ? eventMs : null,
    },
    legs: [],
    event: {
      eventId: e.id,
      event: e.event,
      participantSid: e.participant?.sid ?? null,
      trackSid: e.track?.sid ?? null,
      createdAtS: e.createdAt ?? null,
      payload,
    },
  };

  const p = e.participant;
  if ((PARTICIPANT_EVENTS as readonly string[]).includes(e.event)) {
    if (!p) throw new WebhookShapeError(`${e.event} without participant`);
    const leaving = e.event !== "participant_joined";
    const leg: LegFacts = {
      participantSid: p.sid,
      identity: p.identity ?? null,
      kind: p.kind ?? "STANDARD",
      state: p.state ?? (leaving ? "DISCONNECTED" : null),
      joinedAtMs: p.joinedAtMs ?? secondsToMs(p.joinedAt) ?? (leaving ? null : eventMs),
      leftAtMs: leaving ? eventMs : null,
      disconnectReason: leaving ? (p.disconnectReason ?? "UNKNOWN_REASON") : (p.disconnectReason ?? null),
      attributes: p.attributes ?? null,
    };
    update.legs.push(leg);
  } else if ((TRACK_EVENTS as readonly string[]).includes(e.event)) {
    if (!p) throw new WebhookShapeError(`${e.event} without participant`);
    // track_* carry a participant with only sid and identity: no kind here (it is not STANDARD by omission).
    const leg: LegFacts = { participantSid: p.sid, identity: p.identity ?? null };
    const t = e.track;
    if (e.event === "track_published" && t && (t.type ?? "AUDIO") === "AUDIO") {
      leg.firstAudioTrackAtMs = eventMs;
      leg.audioTrackSid = t.sid ?? null;
      leg.audioCodec = codecOf(t.mimeType);
    }
    update.legs.push(leg);
  }
  return update;
}

function secondsToMs(s: number | undefined): number | null {
  return s === undefined || s === 0 ? null : s * 1000;
}

/** "audio/opus" → "opus"; the codec as observations spell it. */
function codecOf(mimeType: string | undefined): string | null {
  if (!mimeType) return null;
  const slash = mimeType.indexOf("/");
  return (slash >= 0 ? mimeType.slice(slash + 1) : mimeType).toLowerCase() || null;
}
