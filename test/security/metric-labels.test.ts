import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openaiChatYaml, OPERATOR_KEY } from "../gateway/support.js";
import { record } from "../ingest/helpers.js";
import { obtainPromtool, promtoolCheck } from "../metrics/promtool.js";
import { useTestApp } from "../support/app.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";

/**
 * Control characters must not reach a /v1/metrics label raw: the text format escapes only backslash,
 * double quote and line feed, so a carriage return in a project name passes promtool but splits the
 * line for line-based consumers. The gateway refuses them in attribution; whatever reaches a label by
 * another way (ingested rows) is replaced. The exposition is checked line by line and with promtool.
 */
let stub: StubServer;
beforeAll(async () => {
  stub = await openaiChatStub().start();
});
afterAll(async () => {
  await stub?.close();
});
const t = useTestApp(() => ({
  listen: true,
  yaml: openaiChatYaml(stub.url),
}));

const HOSTILE = ["cr\rproject", "nel\u0085project", "bell\u0007project", "ls\u2028project", "del\u007fproject", "tab\tproject"];

/** One sample or comment per line, nothing else: what a line-based consumer relies on. */
const LINE = /^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? \S+)$/;

describe("control characters and metric labels", () => {
  it("gateway attribution refuses a project or session holding a control character (path or header)", async () => {
    const before = stub.hits.length;
    const body = JSON.stringify({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] });
    for (const bad of ["cr%0Dproject", "nel%C2%85project", "bell%07project"]) {
      const res = await fetch(`${t.base}/p/${bad}/s/s1/openai/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" }, body });
      expect(res.status, bad).toBe(400);
      expect(await res.text()).toContain("control characters");
    }
    const header = await fetch(`${t.base}/openai/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json", "x-voxgate-project": "tab\tproject" },
      body,
    });
    expect(header.status).toBe(400);
    expect(stub.hits.length).toBe(before);
  });

  it("ingested names with control characters never reach a label raw: every line stays one sample, promtool accepts it", async () => {
    const rows = HOSTILE.map((project) => record({ project, model_id: `openai/m${project}` }));
    const ingest = await t.call("POST", "/v1/ingest", { key: OPERATOR_KEY, body: rows });
    expect(ingest.status).toBe(200);
    const res = await t.call("GET", "/v1/metrics", { key: OPERATOR_KEY });
    expect(res.status).toBe(200);
    const text = await res.text();
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the attack is control characters
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/);
    const lines = text.split("\n").filter((l) => l !== "");
    for (const line of lines) expect(line, JSON.stringify(line)).toMatch(LINE);
    // CRLF-aware splitting gives the same lines.
    expect(text.split(/\r\n|\r|\n/).filter((l) => l !== "")).toEqual(lines);
    expect(text).toContain("cr\ufffdproject");
    const promtool = obtainPromtool();
    if ("path" in promtool) {
      const r = promtoolCheck(promtool.path, text);
      expect(r.output).not.toMatch(/error|parse/i);
      expect([0, 3]).toContain(r.status);
    }
  });
});
