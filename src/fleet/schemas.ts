import { z } from "zod";
import { COST_PERIODS } from "../reports/window.js";
import { FLEET_INDEX_SORTS } from "./index-queries.js";

/** Answer schema of GET /api/agents, the fleet index (src/fleet/index-queries.ts builds it). */

const ms = z.number().nullable().describe("milliseconds; null without samples");

export const FleetAgentSchema = z
  .object({
    agent_id: z.string(),
    tenant_id: z.string().nullable(),
    agent_name: z.string().nullable(),
    host: z.string().nullable(),
    version: z.string().nullable(),
    region: z.string().nullable(),
    online: z.boolean().describe("a heartbeat within ageing_seconds"),
    last_heartbeat_at: z.string().nullable().describe("ISO-8601 UTC; null without a heartbeat"),
    sessions: z.number().int().describe("sessions started in the window"),
    calls: z.number().int().describe("production calls started in the window"),
    requests: z.number().int().describe("every request, probe traffic included"),
    errors: z.number().int().describe("production requests with status error"),
    error_rate: z.number().nullable().describe("errors / production requests, 4 decimals; null without production requests"),
    cost_usd: z.number().describe("USD"),
    rated_price_usd: z.number().describe("USD"),
    turns: z.number().int(),
    p95_response_speed_ms: ms,
    p95_ttfb_ms: z.object({ stt: ms, llm: ms, tts: ms }),
    probe: z.object({ requests: z.number().int(), turns: z.number().int(), calls: z.number().int() }).describe("probe traffic, counted apart"),
  })
  .meta({ id: "FleetAgent" });

export const FleetIndexSchema = z
  .object({
    period: z.enum(COST_PERIODS),
    sort: z.enum(FLEET_INDEX_SORTS),
    limit: z.number().int(),
    offset: z.number().int(),
    total_agents: z.number().int(),
    online: z.number().int(),
    ageing_seconds: z.number(),
    agents: z.array(FleetAgentSchema).describe("one page, sorted by sort"),
  })
  .meta({ id: "FleetIndex" });
export type FleetIndexAnswer = z.infer<typeof FleetIndexSchema>;

const text = z.string().nullable();

export const RosterEntrySchema = z
  .object({
    agent_id: z.string(),
    agent_name: text,
    dispatch_name: text,
    status: text.describe("idle or busy, as the agent reported it"),
    active_sessions: z.number().int().nullable(),
    version: text,
    project: text,
    tenant_id: text.describe("the tenant of the key that sent the heartbeat"),
    region: text,
    host: text,
    started_at: text.describe("the worker's start, ISO-8601 UTC"),
    memory_rss_bytes: z.number().nullable(),
    memory_total_bytes: z.number().nullable(),
    cpu_pct: z.number().nullable(),
    ts: text.describe("the agent's own clock at the snapshot, ISO-8601 UTC"),
    last_seen_at: z.string().describe("the collector's clock at the last heartbeat, ISO-8601 UTC"),
    seconds_since_heartbeat: z.number().describe("0.1 s resolution"),
  })
  .meta({ id: "RosterEntry", description: "A worker's presence (never cost or latency)" });

export const RosterSchema = z
  .object({
    agents: z.array(RosterEntrySchema).describe("workers heard from within ageing_seconds, newest heartbeat first"),
    count: z.number().int(),
    ageing_seconds: z.number().describe("a worker leaves the roster this long after its last heartbeat"),
  })
  .meta({ id: "Roster" });
export type RosterResponse = z.infer<typeof RosterSchema>;

export const HeartbeatAcceptedSchema = z.object({ status: z.literal("accepted") });
