import type { IncomingHttpHeaders } from "node:http";
import { isStorableText, MAX_ID_LENGTH } from "../ingest/fields.js";
import { headerValue } from "./protocol.js";

/** Who a call is billed to. The tenant is never here: it always comes from the key. */
export interface Attribution {
  project: string;
  sessionId: string | null;
}

/** The project a call is filed under when it names none (the ingest default). */
export const DEFAULT_PROJECT = "default";

/** The base-URL form for clients that can only change a base URL: /p/{project}/s/{session_id}/<vendor prefix>. */
export const ATTRIBUTION_PATH = "/p/:project/s/:session";

/** C0 controls, DEL and C1 controls: refused in attribution (they would reach logs and metric labels). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

const valid = (v: string) => v.length >= 1 && v.length <= MAX_ID_LENGTH && isStorableText(v) && !CONTROL_CHARS.test(v);

/**
 * Project and session from the path prefix (wins) or X-Voxgate-Project / X-Voxgate-Session. A value
 * that could not be stored (too long, NUL) is an error, never silently dropped: the call would be
 * billed to the wrong project.
 */
export function attributionOf(
  pathParams: { project?: string; session?: string },
  headers: IncomingHttpHeaders,
): { ok: true; value: Attribution } | { ok: false; message: string } {
  const project = pathParams.project ?? headerValue(headers, "x-voxgate-project");
  const session = pathParams.session ?? headerValue(headers, "x-voxgate-session");
  if (project !== undefined && !valid(project)) return { ok: false, message: `project must be 1-${MAX_ID_LENGTH} characters of text without control characters` };
  if (session !== undefined && !valid(session)) return { ok: false, message: `session must be 1-${MAX_ID_LENGTH} characters of text without control characters` };
  return { ok: true, value: { project: project ?? DEFAULT_PROJECT, sessionId: session ?? null } };
}
