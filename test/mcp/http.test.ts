import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { KEYS } from "../support/fixtures.js";
import { ADMIN_TOOLS, MCP_YAML, READ_TOOLS, httpClient, seedCalls, WRITE_TOOLS } from "./support.js";

describe("MCP over streamable HTTP (POST /mcp)", () => {
  const t = useTestApp({ yaml: MCP_YAML, listen: true });
  const clients = new Map<string, Client>();
  const client = async (key: string) => {
    let c = clients.get(key);
    if (!c) {
      c = await httpClient(t.base, key);
      clients.set(key, c);
    }
    return c;
  };
  beforeAll(async () => {
    await seedCalls(t.services.database.db);
    const made = await t.call("POST", "/v1/projects", { key: KEYS.ops, body: { project_id: "support", name: "Support", daily_budget: 50 } });
    expect(made.status).toBe(200);
  });
  afterAll(async () => {
    for (const c of clients.values()) await c.close();
  });

  const route = async (path: string, key: string) => {
    const res = await t.call("GET", path, { key });
    expect(res.status, path).toBe(200);
    return res.json();
  };
  const call = async (key: string, name: string, args: Record<string, unknown> = {}) => {
    const res = await (await client(key)).callTool({ name, arguments: args });
    expect(res.isError, JSON.stringify(res.content)).toBeFalsy();
    const [text] = res.content as { type: string; text: string }[];
    expect(text?.type).toBe("text");
    expect(text?.text.startsWith(`${name}:`)).toBe(true);
    return res.structuredContent;
  };

  it("lists the tools each key's scopes allow: operator all, reader no write tools, ingest-only key health alone", async () => {
    const names = async (key: string) => (await (await client(key)).listTools()).tools.map((x) => x.name).sort();
    expect(await names(KEYS.ops)).toEqual([...READ_TOOLS, ...WRITE_TOOLS, ...ADMIN_TOOLS].sort());
    expect(await names(KEYS.reader)).toEqual([...READ_TOOLS].sort());
    expect(await names(KEYS.writer)).toEqual([...READ_TOOLS, ...WRITE_TOOLS].sort());
    expect(await names(KEYS.ingest)).toEqual(["get_health"]);
    const tools = (await (await client(KEYS.ops)).listTools()).tools;
    const costs = tools.find((x) => x.name === "get_costs");
    expect(costs?.inputSchema.type).toBe("object");
    expect(Object.keys(costs?.inputSchema.properties ?? {}).sort()).toEqual(["period", "project"]);
    expect(Object.keys(tools.find((x) => x.name === "get_logs")?.inputSchema.properties ?? {}).sort()).toEqual(["limit", "modality", "project"]);
  });

  it("answers each read tool with the route's JSON for the same query", async () => {
    const same = async (key: string, name: string, args: Record<string, unknown>, path: string, wrap?: string) => {
      const got = await call(key, name, args);
      const want = await route(path, key);
      expect(got, name).toEqual(wrap ? { [wrap]: want } : want);
    };
    for (const key of [KEYS.ops, KEYS.acmeReader]) {
      await same(key, "get_status", {}, "/v1/status");
      await same(key, "get_costs", { period: "week", project: "support" }, "/v1/costs?period=week&project=support");
      await same(key, "get_latency", { period: "today" }, "/v1/latency?period=today");
      await same(key, "get_logs", { limit: 2, modality: "llm" }, "/v1/logs?limit=2&modality=llm", "logs");
      await same(key, "list_calls", { limit: 10 }, "/api/calls?limit=10", "calls");
      await same(key, "get_fleet", { period: "today" }, "/api/agents?period=today");
      await same(key, "get_billing_usage", {}, "/v1/billing/usage");
      await same(key, "quote_price", { modality: "llm", model: "openai/gpt-4.1-mini" }, "/v1/billing/rate-card/quote?modality=llm&model=openai/gpt-4.1-mini");
      await same(key, "get_pricing_gaps", {}, "/v1/billing/rate-card/gaps");
      await same(key, "get_rate_card", {}, "/v1/billing/rate-card");
      await same(key, "list_projects", {}, "/v1/projects");
      await same(key, "get_project", { project_id: "support" }, "/v1/projects/support");
      await same(key, "list_models", {}, "/v1/models");
      await same(key, "get_session", { session_id: "s-acme-1" }, "/v1/sessions/s-acme-1");
      await same(key, "get_room_latency", { room: "room-acme", include_probe: true }, "/v1/rooms/room-acme/latency?include_probe=true");
    }
    await same(KEYS.ops, "list_providers", {}, "/v1/providers");
    const health = (await call(KEYS.reader, "get_health")) as { status: string; version: string };
    expect(health.status).toBe("ok");
    expect(health.version).toBe(((await (await t.call("GET", "/health")).json()) as { version: string }).version);
    // A page of sessions: the rows of GET /v1/sessions, the X-Next-Cursor header as next_cursor.
    const res = await t.call("GET", "/v1/sessions?limit=1", { key: KEYS.ops });
    expect(await call(KEYS.ops, "list_sessions", { limit: 1 })).toEqual({ sessions: await res.json(), next_cursor: res.headers.get("x-next-cursor") });
  });

  it("scopes every tool to the key's tenant: a tenant key reads only its own rows", async () => {
    const costs = (await call(KEYS.acmeReader, "get_costs", { period: "week" })) as { total: number };
    expect(costs.total).toBe(0.3);
    const sessions = (await call(KEYS.acmeReader, "list_sessions")) as { sessions: { session_id?: string; id?: string }[] };
    const ids = JSON.stringify(sessions.sessions);
    expect(ids).toContain("s-acme-1");
    expect(ids).not.toContain("s-globex-1");
    const other = await (await client(KEYS.acmeReader)).callTool({ name: "get_session", arguments: { session_id: "s-globex-1" } });
    expect(other.isError).toBe(true);
    expect(other.structuredContent).toEqual(await (await t.call("GET", "/v1/sessions/s-globex-1", { key: KEYS.acmeReader })).json());
    expect((await call(KEYS.globexReader, "get_costs", { period: "week" })) as { total: number }).toMatchObject({ total: 7.5 });
    // The operator-only provider list refuses a tenant key, as the route does (403 there).
    const providers = await (await client(KEYS.acmeReader)).callTool({ name: "list_providers", arguments: {} });
    expect(providers.isError).toBe(true);
    expect((providers.structuredContent as { error: { code: string } }).error.code).toBe("forbidden");
  });

  it("refuses a write tool to a read key with an MCP error naming the missing scope, and writes nothing", async () => {
    const err = await (await client(KEYS.reader)).callTool({ name: "create_project", arguments: { project_id: "nope" } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).message).toContain("write");
    const keys = await (await client(KEYS.writer)).callTool({ name: "list_api_keys", arguments: {} }).catch((e: unknown) => e);
    expect((keys as McpError).message).toContain("admin");
    expect((await t.call("GET", "/v1/projects/nope", { key: KEYS.ops })).status).toBe(404);
  });

  it("answers bad arguments with an MCP error naming the field, never a crash", async () => {
    const c = await client(KEYS.ops);
    for (const [name, args, field] of [
      ["get_costs", { period: "fortnight" }, "period"],
      ["get_logs", { limit: 0 }, "limit"],
      ["get_logs", { limit: "many" }, "limit"],
      ["quote_price", { modality: "video", model: "x" }, "modality"],
      ["get_session", {}, "session_id"],
      ["create_project", { project_id: "bad id!" }, "project_id"],
    ] as const) {
      const err = await c.callTool({ name, arguments: args }).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(McpError);
      expect((err as McpError).code).toBe(-32602);
      expect((err as McpError).message).toContain(field);
      expect((err as McpError).message).not.toMatch(/MCP error.*MCP error/);
    }
    const unknown = await c.callTool({ name: "drop_tables", arguments: {} }).catch((e: unknown) => e);
    expect((unknown as McpError).message).toContain("drop_tables");
    expect(await call(KEYS.ops, "get_health")).toMatchObject({ status: "ok" });
  });

  it("writes through the routes' own functions: projects and rate rules, with the routes' answers", async () => {
    const made = await call(KEYS.writer, "create_project", { project_id: "mcp-made", name: "Made by MCP", daily_budget: 5 });
    expect(made).toMatchObject({ project_id: "mcp-made" });
    expect(await call(KEYS.writer, "update_project", { project_id: "mcp-made", changes: { daily_budget: 9 } })).toEqual({ project_id: "mcp-made", updated: true });
    expect(await route("/v1/projects/mcp-made", KEYS.ops)).toMatchObject({ project_id: "mcp-made", daily_budget: 9 });
    const rule = (await call(KEYS.writer, "upsert_rate_rule", { modality: "tts", markup: 1.5 })) as { rule_id: string; created: boolean };
    expect(rule.created).toBe(true);
    const card = (await route("/v1/billing/rate-card/rules", KEYS.ops)) as { rules: { rule_id: string }[] };
    expect(card.rules.map((r) => r.rule_id)).toContain(rule.rule_id);
    expect(await call(KEYS.writer, "delete_rate_rule", { rule_id: rule.rule_id })).toMatchObject({ deleted: true, rule_id: rule.rule_id });
    // A tenant-bound write key may not change operator configuration (the routes' 403), as a tool result error.
    const refused = await (await client(KEYS.acmeWriter)).callTool({ name: "create_project", arguments: { project_id: "acme-own" } });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as { error: { code: string } }).error.code).toBe("forbidden");
  });

  it("serves the OpenAPI document and the rate card as resources", async () => {
    const c = await client(KEYS.reader);
    const uris = (await c.listResources()).resources.map((r) => r.uri).sort();
    expect(uris).toEqual(["voxgate://openapi.json", "voxgate://rate-card"]);
    const doc = JSON.parse(((await c.readResource({ uri: "voxgate://openapi.json" })).contents[0] as { text: string }).text);
    expect(doc).toEqual(await (await t.call("GET", "/v1/openapi.json")).json());
    expect(doc.paths["/mcp"].post).toBeDefined();
    expect(doc.info.description).toContain("/mcp");
    const card = JSON.parse(((await c.readResource({ uri: "voxgate://rate-card" })).contents[0] as { text: string }).text);
    expect(card).toEqual(await route("/v1/billing/rate-card", KEYS.reader));
  });

  it("answers 401 without a valid key and 405 to GET and DELETE (stateless)", async () => {
    const body = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    const headers = { accept: "application/json, text/event-stream" };
    expect((await t.call("POST", "/mcp", { body, headers })).status).toBe(401);
    expect((await t.call("POST", "/mcp", { body, headers, key: "not-a-key-0123456789" })).status).toBe(401);
    const get = await t.call("GET", "/mcp", { key: KEYS.ops, headers });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect((await t.call("DELETE", "/mcp", { key: KEYS.ops })).status).toBe(405);
    const bad = await t.call("POST", "/mcp", { key: KEYS.ops, raw: "{not json", headers: { ...headers, "content-type": "application/json" } });
    expect(bad.status).toBe(400);
  });
});
