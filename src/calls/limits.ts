/** Every limit of the call-recording endpoints, named once (docs/api/calls.md, limits). */

/** Bounded observation queue: the 1001st pending report is refused with 429 (newest dropped). */
export const OBSERVATION_QUEUE_LIMIT = 1000;

/** Legs per observation report. */
export const MAX_LEGS_PER_OBSERVATION = 16;

/**
 * Accepted epoch-millisecond range for every `*_ms` field: [1e12, 1e13), i.e. 2001-09-09 to 2286-11-20.
 * A seconds-scale value (~1.7e9) is below it and a microseconds-scale value (~1.7e15) above it.
 */
export const EPOCH_MS_MIN = 1e12;
export const EPOCH_MS_MAX = 1e13;

/** Deepest nesting of a webhook payload we store as jsonb (LiveKit events nest about 5 deep). */
export const MAX_WEBHOOK_JSON_DEPTH = 32;

/** Upper bounds of webhook times: seconds below 1e10 and milliseconds below EPOCH_MS_MAX (year 2286). */
export const WEBHOOK_SECONDS_MAX = 1e10;

/** Clock skew allowed on the webhook token's exp/nbf, as LiveKit's SDK allows. */
export const WEBHOOK_CLOCK_TOLERANCE_SECONDS = 10;

/** Longest id (room/participant/track sid, attempt id…) and longest free-text field we store. */
export const MAX_ID_LENGTH = 256;
export const MAX_TEXT_LENGTH = 1024;
/** Participant attributes kept per leg (LiveKit SIP attributes are a dozen or so). */
export const MAX_ATTRIBUTES = 128;

/** Reports the flusher writes per transaction. */
export const FLUSH_BATCH = 100;

/** Flusher retry backoff after a database failure: doubles from min to max. */
export const FLUSH_RETRY_MIN_MS = 100;
export const FLUSH_RETRY_MAX_MS = 5000;
/** How long shutdown keeps retrying to drain the queue against a failing database. */
export const DRAIN_DEADLINE_MS = 15_000;
