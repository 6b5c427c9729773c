import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Db } from "../../src/db/client.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { authYaml } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";

/** Auth on, providers configured, the fixture keys the MCP tests list tools with. */
export const MCP_YAML = `
providers:
  openai: { api_key: sk-test-openai }
  deepgram: { api_key: dg-test }
${authYaml("ops", "reader", "writer", "ingest", "acmeReader", "acmeWriter", "globexReader")}`;

const HOUR = 3_600_000;

function row(over: Partial<RequestRow> & { agoMs: number }): RequestRow {
  const { agoMs, ...rest } = over;
  const model_id = rest.model_id ?? "openai/gpt-4.1-mini";
  return {
    id: randomUUID(),
    ts: new Date(Date.now() - agoMs),
    modality: "llm",
    model_id,
    provider: model_id.split("/")[0] ?? "openai",
    ttfb_ms: 120,
    total_latency_ms: 480,
    ...rest,
  };
}

/** Two tenants' calls (sessions and rooms), one unpriced model, through ingest's own write path. */
export async function seedCalls(db: Db): Promise<void> {
  await seedRequests(db, [
    row({ tenant_id: "acme", agoMs: HOUR, project: "support", session_id: "s-acme-1", room_name: "room-acme", cost_usd: "0.25" }),
    row({ tenant_id: "acme", agoMs: 2 * HOUR, project: "support", session_id: "s-acme-1", room_name: "room-acme", modality: "stt", model_id: "deepgram/nova-3", cost_usd: "0.05", status: "error" }),
    row({ tenant_id: "acme", agoMs: 3 * HOUR, project: "sales", session_id: "s-acme-2", room_name: "room-acme-2", model_id: "acme/mystery-1", pricing: "unknown", cost_usd: null }),
    row({ tenant_id: "globex", agoMs: HOUR, project: "support", session_id: "s-globex-1", room_name: "room-globex", cost_usd: "7.5" }),
  ]);
}

/** The SDK's own client over streamable HTTP, with a bearer key. */
export async function httpClient(base: string, key: string | undefined): Promise<Client> {
  const client = new Client({ name: "voxgate-test", version: "0" });
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
  return client;
}

export const READ_TOOLS = [
  "get_health",
  "get_status",
  "get_costs",
  "get_latency",
  "get_logs",
  "list_sessions",
  "get_session",
  "get_room_latency",
  "list_calls",
  "get_fleet",
  "get_billing_usage",
  "quote_price",
  "get_pricing_gaps",
  "get_rate_card",
  "list_projects",
  "get_project",
  "list_models",
  "list_providers",
];
export const WRITE_TOOLS = ["upsert_rate_rule", "delete_rate_rule", "create_project", "update_project"];
export const ADMIN_TOOLS = ["list_api_keys", "revoke_api_key"];
