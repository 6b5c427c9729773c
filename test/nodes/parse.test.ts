import { describe, expect, it } from "vitest";
import { MAX_SERIES_PER_SCRAPE, parseExposition, parseSampleLine } from "../../src/nodes/prometheus.js";
import { parseScrapeTargets } from "../../src/nodes/targets.js";

describe("VOXGATE_NODE_SCRAPE_TARGETS parsing", () => {
  it("reads source:name=url entries, trims, ignores empty entries", () => {
    const { targets, skipped } = parseScrapeTargets(
      " livekit-server:lk-1=http://10.0.0.5:6789/metrics , ,host-exporter:lk-1=https://10.0.0.5:9100/metrics?x=1,livekit-sip:sip-a=http://sip:9090/",
    );
    expect(skipped).toEqual([]);
    expect(targets.map((t) => [t.source, t.node, t.url.toString()])).toEqual([
      ["livekit-server", "lk-1", "http://10.0.0.5:6789/metrics"],
      ["host-exporter", "lk-1", "https://10.0.0.5:9100/metrics?x=1"],
      ["livekit-sip", "sip-a", "http://sip:9090/"],
    ]);
    expect(targets.every((t) => t.authorization === null)).toBe(true);
  });

  it("turns percent-encoded URL credentials into a Basic header and masks them for display", () => {
    const { targets } = parseScrapeTargets("host-exporter:n1=http://scraper:p%40ss%3Aw%2Frd@127.0.0.1:9100/metrics");
    const t = targets[0];
    expect(t?.authorization).toBe(`Basic ${Buffer.from("scraper:p@ss:w/rd").toString("base64")}`);
    expect(t?.url.toString()).toBe("http://127.0.0.1:9100/metrics");
    expect(t?.display).toBe("http://***@127.0.0.1:9100/metrics");
  });

  it("skips malformed entries with a reason, masking credentials in what it reports", () => {
    const { targets, skipped } = parseScrapeTargets(
      "garbage,media-server:n=http://h/,livekit-server:=http://h/,livekit-server:n=ftp://u:secret@h/,livekit-server:bad name=http://h/,livekit-server:n=not a url,livekit-server:ok=http://h/m",
    );
    expect(targets.map((t) => t.node)).toEqual(["ok"]);
    expect(skipped.map((s) => s.position)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(JSON.stringify(skipped)).not.toContain("secret");
    expect(skipped[3]?.display).toContain("ftp://***@h/");
  });

  it("reads nothing from an unset or empty variable", () => {
    expect(parseScrapeTargets(undefined).targets).toEqual([]);
    expect(parseScrapeTargets("").targets).toEqual([]);
    expect(parseScrapeTargets(" , ").skipped).toEqual([]);
  });
});

describe("Prometheus text format reader", () => {
  it("parses names, labels with escapes, values and optional timestamps", () => {
    expect(parseSampleLine('livekit_packet_total{direction="incoming",type="rtp"} 1027 1395066363000')).toEqual({
      metric: "livekit_packet_total",
      labels: { direction: "incoming", type: "rtp" },
      value: 1027,
    });
    expect(parseSampleLine('x{a="q\\"uote\\\\back\\nline",} 1.5e3')?.labels).toEqual({ a: 'q"uote\\back\nline' });
    expect(parseSampleLine("node_load1 0.42")).toEqual({ metric: "node_load1", labels: {}, value: 0.42 });
  });

  it("skips malformed and non-finite lines instead of failing", () => {
    for (const line of ["{a=\"b\"} 1", 'x{a="b" 1', "x{a=b} 1", "x", "x NaN", "x +Inf", 'x{a="unterminated} 1', "9bad 1"]) {
      expect(parseSampleLine(line), line).toBeNull();
    }
  });

  it("keeps only the allowlist of the source, drops histogram buckets, and bounds the series", () => {
    const text = [
      "# HELP livekit_room_total rooms",
      "# TYPE livekit_room_total gauge",
      "livekit_room_total 3",
      'livekit_jitter_us_bucket{le="100"} 4',
      "livekit_jitter_us_sum 900",
      "go_gc_duration_seconds 0.1",
      "node_load1 9",
      "garbage line here",
    ].join("\n");
    const { samples } = parseExposition(text, "livekit-server");
    expect(samples.map((s) => s.metric)).toEqual(["livekit_room_total", "livekit_jitter_us_sum"]);
    const big = Array.from({ length: MAX_SERIES_PER_SCRAPE + 50 }, (_, i) => `node_cpu_seconds_total{cpu="${i}"} ${i}`).join("\n");
    const bounded = parseExposition(big, "host-exporter");
    expect(bounded.samples.length).toBe(MAX_SERIES_PER_SCRAPE);
    expect(bounded.truncated).toBe(true);
  });
});
