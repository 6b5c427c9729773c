import { z } from "zod";
import { MAX_IDENTIFIER_LENGTH, ROOM_TURNS_PAGE_MAX } from "./params.js";

/** Answer schemas of the session and room reads (the handlers build them in queries.ts and room-latency.ts). */

export const SessionRowSchema = z
  .object({
    id: z.string().describe("the session_id the agent-side gateway minted; records, turns and dead air carry it"),
    project: z.string(),
    started_at: z.string().describe("ISO-8601 UTC with milliseconds"),
    ended_at: z.string().describe("ISO-8601 UTC with milliseconds"),
    modalities: z.array(z.string()).describe("sorted (llm, stt, tts)"),
    request_count: z.number().int(),
    total_cost_usd: z.number().describe("provider cost (cost_usd), summed in SQL at numeric(20,10), rounded to 10 decimals"),
    tenant_id: z.string().nullable(),
    room_name: z.string().nullable().describe("the room the session ran in, learned from any row naming it"),
    agent_id: z.string().nullable(),
  })
  .meta({ id: "SessionRow", description: "A session as ingest keeps it on the sessions row" });

export const SessionDetailSchema = SessionRowSchema.extend({
  by_modality: z
    .record(z.string(), z.object({ cost: z.number().describe("USD, summed in SQL from requests.cost_usd"), request_count: z.number().int() }))
    .describe("per modality the session's requests used (its own tenant's requests only)"),
  providers: z.array(z.string()).describe("distinct providers of the session's requests, sorted"),
});

const Summary = z
  .object({
    count: z.number().int(),
    avg: z.number(),
    min: z.number(),
    max: z.number(),
    p50: z.number(),
    p90: z.number(),
    p95: z.number(),
    p99: z.number(),
  })
  .describe("elapsed ms, from the one summary routine (src/stats/summary.ts)");

export const RoomLatencySchema = z.object({
  room: z.string().describe("the room name asked for"),
  turns: z
    .array(
      z.object({
        seq: z.number().int(),
        turn_index: z.number().int(),
        session_id: z.string(),
        caller_speak_end_ms: z.number().describe("epoch ms"),
        agent_speak_start_ms: z.number().nullable().describe("epoch ms"),
        response_speed_ms: z.number().nullable().describe("elapsed; a turn without it gives no sample"),
      }),
    )
    .describe(`ordered by seq, only seq > since_turn, at most ${ROOM_TURNS_PAGE_MAX}`),
  turn_count: z.number().int().describe("every turn of the room (not narrowed by since_turn)"),
  next_since_turn: z.number().int().nullable().describe(`when more than ${ROOM_TURNS_PAGE_MAX} turns follow since_turn: the seq to pass next`),
  components: z
    .object({
      stt_ttfb_ms: Summary.nullable(),
      llm_ttfb_ms: Summary.nullable(),
      tts_ttfb_ms: Summary.nullable(),
      dead_air_ms: Summary.nullable().describe("dead-air duration_ms"),
    })
    .describe("whole-call summaries, each null without samples; TTFB of the room's requests per modality (status error and rows without ttfb_ms excluded)"),
  e2e_ms: Summary.nullable().describe("response_speed_ms over the whole call, or null (not zeros) when no turn has one"),
  is_probe: z.boolean().describe("a call of this room is marked probe; its samples are then left out unless include_probe"),
});

export const sessionParams = z.object({ session_id: z.string().describe(`1-${MAX_IDENTIFIER_LENGTH} printable characters; anything else is the 404`) });
export const roomParams = z.object({ room: z.string().describe("the room name") });
