import { z } from "zod";
import { MAX_ID_LENGTH, MAX_TEXT_LENGTH } from "./limits.js";

/**
 * Strings Postgres can store: no NUL (text columns refuse it) and no lone UTF-16 surrogate (jsonb
 * refuses "\ud800"). JSON.parse lets both through, so they are refused here as 422, never a 500.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, "g");

export function storable(s: string): boolean {
  return !s.includes("\u0000") && !LONE_SURROGATE.test(s);
}

const storableMessage = "must not contain NUL characters or unpaired surrogates";

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
