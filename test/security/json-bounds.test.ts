import { describe, expect, it } from "vitest";
import { jsonBoundsProblem } from "../../src/http/body.js";

/** Depth and value count of parsed JSON, counted as the scan counts them (containers, then elements and members after the first). */
function counted(v: unknown, depth = 0): { depth: number; values: number } {
  if (v === null || typeof v !== "object") return { depth, values: 0 };
  const items = Array.isArray(v) ? v : Object.values(v as object);
  let d = depth + 1;
  let values = 1 + Math.max(0, items.length - 1);
  for (const item of items) {
    const c = counted(item, depth + 1);
    d = Math.max(d, c.depth);
    values += c.values;
  }
  return { depth: d, values };
}

describe("jsonBoundsProblem", () => {
  // Strings whose quotes, backslash runs and brackets fall on either side of the scan's short-string window.
  const awkward = [
    "",
    "a",
    '\\"',
    "\\\\",
    '\\\\\\"{[,',
    "x".repeat(23),
    "x".repeat(24),
    `${"x".repeat(23)}\\"`,
    `${"x".repeat(24)}\\\\`,
    `${"x".repeat(40)}\\"${"y".repeat(30)}\\\\`,
    `${"[".repeat(30)}${"\\".repeat(50)}"`,
    "é, ü: {[\"]} ".repeat(20),
  ];

  it("skips every string however its quotes and escapes fall, reading bytes as text", () => {
    for (const s of awkward) {
      for (const doc of [{ k: s, n: [s, { [s]: [s, s] }] }, [s], { [s]: { [s]: [[[s]]] } }]) {
        const text = JSON.stringify(doc);
        const c = counted(doc);
        for (const input of [text, Buffer.from(text)]) {
          expect(jsonBoundsProblem(input, c.depth, c.values)).toBeNull();
          expect(jsonBoundsProblem(input, c.depth - 1, c.values)).toBe(`JSON nested deeper than ${c.depth - 1} levels`);
          if (c.values > 1) expect(jsonBoundsProblem(input, c.depth, c.values - 1)).toBe(`JSON holds more than ${c.values - 1} values`);
        }
      }
    }
  });

  it("passes an unterminated string (JSON.parse reports it) and refuses deep nesting", () => {
    for (const text of ['{"a":"xx', `{"a":"${"x".repeat(40)}\\"`, '["\\']) {
      expect(jsonBoundsProblem(text)).toBeNull();
      expect(jsonBoundsProblem(Buffer.from(text))).toBeNull();
    }
    expect(jsonBoundsProblem(Buffer.from("[".repeat(65)))).toBe("JSON nested deeper than 64 levels");
  });
});
