import bcrypt from "bcryptjs";
import { afterAll, describe, expect, it } from "vitest";
import { LEGACY_QUEUE_MAX, LEGACY_RETRY_MAX_MS, LEGACY_RETRY_MS, LegacyKeyGate } from "../../src/auth/legacy-keys.js";

// The bound on bcrypt work for rows minted before digests (the migration path of docs/auth.md).
describe("LegacyKeyGate", () => {
  let clock = 1_000_000;
  const gate = new LegacyKeyGate(() => clock);
  const right = "vk_legacyprefix0right-secret-0123456789abcdef";
  const hash = bcrypt.hashSync(right, 4);
  afterAll(() => gate.close());

  it("verifies the right key and refuses a wrong one", async () => {
    expect(await gate.check(right, "vk_legacyprefi", hash)).toBe("ok");
    expect(await gate.check(`${right}x`, "vk_other", hash)).toBe("wrong");
  });

  it("compares one token per prefix at a time; the rest of a burst is refused unchecked", async () => {
    const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => gate.check(`wrong-${i}`, "vk_burst", hash)));
    expect(burst.filter((r) => r === "wrong")).toHaveLength(1);
    expect(burst.filter((r) => r === "throttled")).toHaveLength(19);
  });

  it("after a failed compare, tries the prefix again only once the retry interval has passed", async () => {
    expect(await gate.check(right, "vk_burst", hash)).toBe("throttled");
    clock += LEGACY_RETRY_MS;
    expect(await gate.check(right, "vk_burst", hash)).toBe("ok");
  });

  it("backs off further with each failed compare of a prefix, up to a cap", async () => {
    const p = "vk_backoff";
    let wait = LEGACY_RETRY_MS;
    for (let i = 0; i < 8; i++) {
      expect(await gate.check(`wrong-${i}`, p, hash)).toBe("wrong");
      clock += wait - 1;
      expect(gate.throttled(p)).toBe(true);
      clock += 1;
      expect(gate.throttled(p)).toBe(false);
      wait = Math.min(wait * 2, LEGACY_RETRY_MAX_MS);
    }
    expect(await gate.check(right, p, hash)).toBe("ok");
    expect(gate.throttled(p)).toBe(false);
  });

  it("bounds the queue across prefixes", async () => {
    const many = await Promise.all(Array.from({ length: LEGACY_QUEUE_MAX + 10 }, (_, i) => gate.check(`w${i}`, `vk_p${i}`, hash)));
    expect(many.filter((r) => r === "wrong")).toHaveLength(LEGACY_QUEUE_MAX);
    expect(many.filter((r) => r === "throttled")).toHaveLength(10);
  });
});
