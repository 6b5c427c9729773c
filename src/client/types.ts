/** Wire shapes the collector accepts (docs/api/ingest.md). Kept free of server imports. */

export interface RequestRecord {
  id: string;
  /** ISO-8601 string, epoch seconds or epoch ms. */
  timestamp: string | number;
  modality: "stt" | "llm" | "tts";
  model_id: string;
  status?: "success" | "error" | "fallback";
  error_message?: string;
  fallback_from?: string;
  provider?: string;
  project?: string;
  session_id?: string;
  room_name?: string;
  agent_id?: string;
  ttfb_ms?: number;
  total_latency_ms?: number;
  cost_usd?: number;
  input_tokens?: number;
  output_tokens?: number;
  cached_input_tokens?: number;
  /** voicegateway's name for cached prompt tokens; `cached_input_tokens` wins when both are given. */
  cached_input_units?: number;
  audio_seconds?: number;
  characters?: number;
  input_units?: number;
  output_units?: number;
  metadata?: Record<string, unknown>;
  is_probe?: boolean;
  /** Agent revision (voicegateway); kept in the row's metadata. */
  revision?: string | number;
  /** Turn of the session this request served (voicegateway); kept in the row's metadata. */
  turn_index?: number;
  /** Where the agent's own price came from (voicegateway); kept in the row's metadata, not used for rating. */
  pricing_source?: string;
}

export interface Turn {
  session_id: string;
  turn_index: number;
  caller_speak_start_ms: number;
  caller_speak_end_ms: number;
  agent_speak_start_ms?: number | null;
  agent_speak_end_ms?: number | null;
  response_speed_ms?: number | null;
  room_name?: string;
}

export interface DeadAirEvent {
  session_id: string;
  started_at_ms: number;
  duration_ms: number;
  threshold_used_ms: number;
  room_name?: string;
}

export interface HeartbeatSnapshot {
  agent_id: string;
  agent_name?: string;
  dispatch_name?: string;
  status?: "idle" | "busy";
  active_sessions?: number;
  version?: string;
  project?: string;
  region?: string;
  host?: string;
  started_at?: string | number;
  memory_rss_bytes?: number;
  memory_total_bytes?: number;
  cpu_pct?: number;
  ts?: string | number;
}
