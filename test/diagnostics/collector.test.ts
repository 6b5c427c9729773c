import { beforeAll, describe, expect, it } from "vitest";
import { parseEnv } from "../../src/config/env.js";
import { collectorGates } from "../../src/diagnostics/check.js";
import { verdictOf } from "../../src/diagnostics/gates.js";
import { useTestApp } from "../support/app.js";

const KEY = "collector-ingest-key-0123456789";

describe("voxgate check against a collector", () => {
  let url: string;
  const t = useTestApp({ env: { VOXGATE_API_KEY: KEY } });
  beforeAll(async () => {
    url = await t.listen();
  });

  it("passes: /health answers, anonymous ingest is refused, keyed ingest of [] is 2xx", async () => {
    const gates = await collectorGates(parseEnv({ VOXGATE_COLLECTOR_URL: url, VOXGATE_API_KEY: KEY }));
    expect(gates.map((g) => [g.gateId, g.status])).toEqual([
      ["collector", "PASS"],
      ["collector_auth", "PASS"],
      ["collector_ingest", "PASS"],
    ]);
  });

  it("fails with a wrong key, is UNKNOWN without one, and FAIL when unreachable", async () => {
    const wrong = await collectorGates(parseEnv({ VOXGATE_COLLECTOR_URL: url, VOXGATE_API_KEY: "wrong-key-0123456789" }));
    expect(verdictOf(wrong.map((g) => g.status))).toBe("FAIL");
    const noKey = await collectorGates(parseEnv({ VOXGATE_COLLECTOR_URL: url }));
    expect(verdictOf(noKey.map((g) => g.status))).toBe("UNKNOWN");
    const down = await collectorGates(parseEnv({ VOXGATE_COLLECTOR_URL: "http://127.0.0.1:9/" }));
    expect(down.map((g) => g.status)).toEqual(["FAIL"]);
  });
});
