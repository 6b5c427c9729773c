import { z } from "zod";
import { DomainError } from "../errors.js";

/** `GET /v1/sessions` page size: 1-1000, default 100 (the same bounds as GET /v1/logs). */
export const SESSION_LIST_LIMIT_MIN = 1;
export const SESSION_LIST_LIMIT_MAX = 1000;
export const SESSION_LIST_LIMIT_DEFAULT = 100;

/** Longest session id / room name / project we look up; anything longer cannot have been stored by ingest. */
export const MAX_IDENTIFIER_LENGTH = 512;

/** Most turns one room-latency answer lists; `next_since_turn` continues from there. */
export const ROOM_TURNS_PAGE_MAX = 1000;

/** The response header carrying the next page's cursor (the body stays a JSON array). */
export const NEXT_CURSOR_HEADER = "X-Next-Cursor";

/** Position in the newest-first (started_at, id) order: the last row of a page. */
export interface SessionCursor {
  /** started_at in epoch microseconds (Postgres precision, so no row is skipped or repeated). */
  startedAtMicros: string;
  id: string;
}

/** Opaque to callers: base64url of `<epoch µs>:<session id>`. */
export function encodeCursor(c: SessionCursor): string {
  return Buffer.from(`${c.startedAtMicros}:${c.id}`, "utf8").toString("base64url");
}

export function decodeCursor(raw: string): SessionCursor | null {
  if (!/^[A-Za-z0-9_-]{1,1400}$/.test(raw)) return null;
  const text = Buffer.from(raw, "base64url").toString("utf8");
  const m = /^(-?\d{1,17}):(.+)$/s.exec(text);
  if (!m?.[1] || !m[2] || !isLookupSafe(m[2])) return null;
  return { startedAtMicros: m[1], id: m[2] };
}

/**
 * True when a string can be sent to Postgres as a text parameter and could match a stored id:
 * bounded, and free of NUL (Postgres text cannot hold it) and other control characters.
 */
export function isLookupSafe(s: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  return s.length > 0 && s.length <= MAX_IDENTIFIER_LENGTH && !/[\u0000-\u001f\u007f]/.test(s);
}

/**
 * `?tenant=` of the session reads: absent → undefined (no narrowing), empty → null (the untenanted
 * session), else the tenant id; false when it cannot name a stored tenant (answered like a missing id).
 */
export function sessionTenantQuery(raw: string | undefined): string | null | undefined | false {
  if (raw === undefined) return undefined;
  if (raw === "") return null;
  return isLookupSafe(raw) ? raw : false;
}

const integerString = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,16}$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

const lookupString = z
  .string()
  .refine(isLookupSafe, `must be 1-${MAX_IDENTIFIER_LENGTH} printable characters`);

/** ISO-8601 date or date-time (offset or Z). A bare date means its UTC midnight. */
const isoInstant = z
  .string()
  .refine(
    (s) => z.iso.date().safeParse(s).success || z.iso.datetime({ offset: true, local: false }).safeParse(s).success,
    "must be an ISO-8601 date or date-time, e.g. 2026-11-21T00:00:00Z",
  )
  .transform((s) => new Date(s.length === 10 ? `${s}T00:00:00Z` : s));

/** An empty filter (`?project=`, `?cursor=`) means no filter, as dashboards send it. */
const optionalFilter = z.preprocess((v) => (v === "" ? undefined : v), lookupString.optional());

export const sessionListQuery = z.object({
  project: optionalFilter,
  room: optionalFilter,
  since: z.preprocess((v) => (v === "" ? undefined : v), isoInstant.optional()),
  limit: integerString("limit", SESSION_LIST_LIMIT_MIN, SESSION_LIST_LIMIT_MAX).default(SESSION_LIST_LIMIT_DEFAULT),
  cursor: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
    .transform((s, ctx) => {
      const c = decodeCursor(s);
      if (!c) {
        ctx.addIssue({ code: "custom", message: "not a cursor this server issued (take it from X-Next-Cursor)" });
        return z.NEVER;
      }
      return c;
    })
      .optional(),
  ),
});
export type SessionListQuery = z.infer<typeof sessionListQuery>;

/** `since_turn`: a `seq` the caller has already seen (0 = from the start). */
export const roomLatencyQuery = z.object({
  since_turn: integerString("since_turn", 0, Number.MAX_SAFE_INTEGER).optional(),
  include_probe: z
    .enum(["true", "false", "1", "0"])
    .optional()
    .transform((v) => v === "true" || v === "1"),
});

/**
 * The 404 for a session or room the caller cannot see. Missing and another tenant's answer with
 * exactly this body, so the route is no existence oracle.
 */
export function sessionNotFound(): DomainError {
  return new DomainError("not_found", "no session with this id");
}

export function roomNotFound(): DomainError {
  return new DomainError("not_found", "no room with this name");
}
