import { z } from "zod";
import { isStorableText, UNSTORABLE_MESSAGE } from "../http/storable.js";
import { MAX_ID_LENGTH, MAX_TEXT_LENGTH } from "./limits.js";

/** Lone surrogates anywhere in a string, for making a signed webhook payload storable. */
const LONE_SURROGATES = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Ids and texts of call reports: refused as 422 when Postgres could not store them (src/http/storable.ts). */
const storable = isStorableText;
const storableMessage = UNSTORABLE_MESSAGE;

export const idString = z.string().min(1).max(MAX_ID_LENGTH).refine(storable, storableMessage);
export const textString = z.string().max(MAX_TEXT_LENGTH).refine(storable, storableMessage);

/** JSON.stringify for a jsonb column: strings made storable (NULs dropped, lone surrogates replaced). */
export function jsonForStorage(value: unknown): string {
  const fast = JSON.stringify(value);
  // JSON.stringify escapes both as \u0000 / \udXXX; without such an escape the text is storable as is.
  if (!/\\u0000|\\ud[89a-f]/i.test(fast)) return fast;
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "string" && !storable(v) ? v.replaceAll("\u0000", "").replace(LONE_SURROGATES, "\ufffd") : v,
  );
}

/** True when a parsed JSON value nests deeper than `max` (checked iteratively: no recursion to overflow). */
export function jsonDepthExceeds(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [v, depth] = item;
    if (v === null || typeof v !== "object") continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}
