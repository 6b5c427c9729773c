import { ApiError } from "./errors.js";

/**
 * Strings Postgres can store. Text columns refuse U+0000 and json/jsonb refuses an unpaired UTF-16
 * surrogate ("\ud800"); JavaScript strings (and JSON.parse, and URL decoding for NUL) let both
 * through, so without a check they reach the database and come back as a 500.
 */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const UNSTORABLE_MESSAGE = "must not contain NUL characters or unpaired surrogates";

export function isStorableText(s: string): boolean {
  return !s.includes("\u0000") && !UNPAIRED_SURROGATE.test(s);
}

/**
 * The dotted path of the first string or object key inside a JSON value that Postgres cannot store,
 * or null when all are storable. Iterative: hostile nesting cannot overflow the stack.
 */
export function firstUnstorablePath(value: unknown): string | null {
  const stack: [unknown, string][] = [[value, ""]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [v, path] = item;
    if (typeof v === "string") {
      if (!isStorableText(v)) return path;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], path ? `${path}.${i}` : String(i)]);
    } else if (v !== null && typeof v === "object") {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, child] = entries[i] as [string, unknown];
        const childPath = path ? `${path}.${k}` : k;
        if (!isStorableText(k)) return childPath;
        stack.push([child, childPath]);
      }
    }
  }
  return null;
}

/**
 * A parsed JSON body with an unstorable string is a 422 naming the field. JSON text carries NUL and
 * surrogates only as \u escapes (strict UTF-8 decoding refuses encoded surrogates, JSON.parse refuses
 * raw control characters), so text without such an escape skips the walk.
 */
export function refuseUnstorableJson(text: string, value: unknown): void {
  if (!/\\u(?:0000|d[89a-f])/i.test(text)) return;
  const path = firstUnstorablePath(value);
  if (path === null) return;
  const message = `${path || "(body)"}: ${UNSTORABLE_MESSAGE}`;
  throw new ApiError("validation_failed", `request failed validation: ${message}`, [{ path, message: UNSTORABLE_MESSAGE }]);
}
