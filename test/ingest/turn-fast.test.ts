import { describe, expect, it } from "vitest";
import { checkTurns, turnSchema } from "../../src/ingest/turns.js";

const now = Date.now();

function valid(): Record<string, unknown> {
  return {
    session_id: "RM_1",
    turn_index: 3,
    caller_speak_start_ms: now - 60_000,
    caller_speak_end_ms: now - 58_000,
    agent_speak_start_ms: now - 57_500,
    agent_speak_end_ms: now - 55_000,
    response_speed_ms: 500,
    room_name: "room-1",
    unknown_key: "ignored",
  };
}

/** Good, borderline and bad values per field, so the zod-free path and the schema see every shape. */
const VARIANTS: Record<string, unknown[]> = {
  session_id: ["s", "", "x".repeat(256), "x".repeat(257), "a\u0000b", "\ud800", 5, null, undefined],
  turn_index: [0, 2_147_483_647, 2_147_483_648, -1, 1.5, "3", null, undefined],
  caller_speak_start_ms: [now - 58_001, now - 70_000, 946684800000, 946684799999, (now - 60_000) / 1000, 1.5e15, now + 10 * 60_000, now - 60_000.5, "1", null, undefined],
  caller_speak_end_ms: [now - 60_000, now - 60_001, now + 4 * 60_000, now + 6 * 60_000, null, undefined],
  agent_speak_start_ms: [null, undefined, now - 54_999, now - 55_000, Number.NaN, "x"],
  agent_speak_end_ms: [null, undefined, now - 57_501, now - 57_500, 0],
  response_speed_ms: [null, undefined, 0, -1, 1.5, 2_147_483_648],
  room_name: [null, undefined, "", "r", "x".repeat(257), "a\u0000"],
};

describe("turns: the zod-free path answers as turnSchema does", () => {
  it("every field variant: the same turn kept, or skipped", () => {
    let checked = 0;
    for (const [key, values] of Object.entries(VARIANTS)) {
      for (const v of values) {
        const raw = valid();
        if (v === undefined) delete raw[key];
        else raw[key] = v;
        const expected = turnSchema.safeParse(raw);
        const got = checkTurns([raw]);
        if (expected.success) expect(got.unique, `${key}=${String(v)}`).toEqual([expected.data]);
        else expect(got.skippedCount, `${key}=${String(v)}`).toBe(1);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it("not an object, or not a plain one, goes to the schema", () => {
    for (const raw of [null, 3, "turn", [valid()], Object.assign(Object.create({ x: 1 }), valid())]) {
      expect(checkTurns([raw]).skippedCount).toBe(turnSchema.safeParse(raw).success ? 0 : 1);
    }
  });
});
