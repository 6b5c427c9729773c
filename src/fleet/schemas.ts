import { z } from "zod";
import { COST_PERIODS } from "../reports/window.js";
import { FLEET_INDEX_SORTS } from "./index-queries.js";

/** Answer schema of GET /api/agents, the fleet index (src/fleet/index-queries.ts builds it). */

const ms = z.number().nullable().describe("milliseconds; null without samples");

const probeNote = "probe traffic: counted apart and left out of every percentile, of errors and of error_rate";

export const FleetAgentSchema = z
  .object({
    agent_id: z.string().describe("the agent (with tenant_id, the row's key)"),
    tenant_id: z.string().nullable().describe("the agent's tenant; null for rows written with an operator key"),
    agent_name: z.string().nullable().describe("from its last heartbeat (presence); null for an agent never heard by heartbeat"),
    host: z.string().nullable().describe("from its last heartbeat (presence); null for an agent never heard by heartbeat"),
    version: z.string().nullable().describe("from its last heartbeat (presence); null for an agent never heard by heartbeat"),
    region: z.string().nullable().describe("from its last heartbeat (presence); null for an agent never heard by heartbeat"),
    online: z.boolean().describe("presence: a heartbeat less than ageing_seconds (45) ago"),
    last_heartbeat_at: z.string().nullable().describe("ISO-8601 UTC time of the last heartbeat; null: never"),
    sessions: z
      .number()
      .int()
      .describe("sessions of this agent (sessions.agent_id: the first record of the session naming an agent) started in the window"),
    calls: z
      .number()
      .int()
      .describe("non-probe calls (LiveKit rooms; calls.agent_id from call observations) started in the window; probe calls are in probe.calls"),
    requests: z.number().int().describe("every request record of the agent in the window, probe included (it happened and it was spent)"),
    errors: z.number().int().describe("non-probe requests with status error"),
    error_rate: z
      .number()
      .nullable()
      .describe("errors / (requests − probe.requests), a fraction 0–1 rounded to 4 decimals; null when there is no non-probe request"),
    cost_usd: z
      .number()
      .describe(
        "USD: Σ cost_usd (what providers charged), probe included, exact (numeric(20,10) summed in SQL, JSON number rounded to 10 decimals); a request without cost counts 0",
      ),
    rated_price_usd: z
      .number()
      .describe("USD: Σ rated_price_usd (what the rate card charges), probe included, same rules as cost_usd"),
    turns: z.number().int().describe("non-probe turns attributed to the agent, by caller_speak_start_ms in the window"),
    p95_response_speed_ms: ms.describe("p95 of those turns' response_speed_ms; null without a sample"),
    p95_ttfb_ms: z
      .object({
        stt: ms.describe("p95 ttfb_ms of the agent's non-probe STT requests; null without a sample"),
        llm: ms.describe("p95 ttfb_ms of the agent's non-probe LLM requests; null without a sample"),
        tts: ms.describe("p95 ttfb_ms of the agent's non-probe TTS requests; null without a sample"),
      })
      .describe("p95 of the agent's non-probe requests' ttfb_ms per modality"),
    probe: z
      .object({
        requests: z.number().int().describe("probe requests excluded for this agent"),
        turns: z.number().int().describe("probe turns excluded for this agent"),
        calls: z.number().int().describe("probe calls excluded for this agent"),
      })
      .describe(probeNote),
  })
  .meta({ id: "FleetAgent" });

export const FleetIndexSchema = z
  .object({
    period: z.enum(COST_PERIODS).describe("the query as applied (default filled in)"),
    sort: z.enum(FLEET_INDEX_SORTS).describe("the query as applied (default filled in)"),
    limit: z.number().int().describe("the query as applied (default filled in)"),
    offset: z.number().int().describe("the query as applied (default filled in)"),
    total_agents: z.number().int().describe("agents in the index for this window and key (all pages)"),
    online: z.number().int().describe("of total_agents, how many heartbeat less than ageing_seconds ago"),
    ageing_seconds: z.number().describe("a heartbeat younger than this marks an agent online (45)"),
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
