CREATE TABLE "agent_presence" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text,
	"agent_id" text NOT NULL,
	"agent_name" text,
	"dispatch_name" text,
	"status" text,
	"active_sessions" integer,
	"version" text,
	"project" text,
	"region" text,
	"host" text,
	"started_at" timestamp with time zone,
	"memory_rss_bytes" bigint,
	"memory_total_bytes" bigint,
	"cpu_pct" double precision,
	"ts" timestamp with time zone,
	"last_seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agent_presence_agent_uq" UNIQUE NULLS NOT DISTINCT("tenant_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"tenant_id" text,
	"issued_by" text,
	"key_prefix" text NOT NULL,
	"key_hash" text NOT NULL,
	"scopes" text[] NOT NULL,
	"role" text DEFAULT 'tenant' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "api_keys_keyPrefix_unique" UNIQUE("key_prefix")
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"ts" timestamp with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"tenant_id" text,
	"entity_type" text NOT NULL,
	"entity_id" text NOT NULL,
	"action" text NOT NULL,
	"before" jsonb,
	"after" jsonb
);
--> statement-breakpoint
CREATE TABLE "call_events" (
	"event_id" text PRIMARY KEY NOT NULL,
	"room_sid" text,
	"event" text NOT NULL,
	"participant_sid" text,
	"track_sid" text,
	"created_at_s" bigint,
	"payload" jsonb,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "call_legs" (
	"participant_sid" text PRIMARY KEY NOT NULL,
	"room_sid" text NOT NULL,
	"identity" text,
	"kind" text,
	"state" text,
	"joined_at_ms" bigint,
	"left_at_ms" bigint,
	"disconnect_reason" text,
	"first_audio_track_at_ms" bigint,
	"audio_track_sid" text,
	"audio_codec" text,
	"attributes" jsonb,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "calls" (
	"room_sid" text PRIMARY KEY NOT NULL,
	"room_name" text,
	"tenant_id" text,
	"project" text,
	"agent_id" text,
	"attempt_id" text,
	"run_id" text,
	"origin" text,
	"channel" text,
	"end_reason" text,
	"trunk_id" text,
	"is_probe" boolean DEFAULT false NOT NULL,
	"started_at_ms" bigint,
	"ended_at_ms" bigint,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "dead_air_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text,
	"session_id" text NOT NULL,
	"room_name" text,
	"started_at_ms" bigint NOT NULL,
	"duration_ms" integer NOT NULL,
	"threshold_used_ms" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "dead_air_session_start_uq" UNIQUE("session_id","started_at_ms")
);
--> statement-breakpoint
CREATE TABLE "diag_gates" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"run_id" bigint NOT NULL,
	"gate_id" text NOT NULL,
	"status" text NOT NULL,
	"detail" text
);
--> statement-breakpoint
CREATE TABLE "diag_runs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text,
	"agent_id" text,
	"verdict" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "models" (
	"model_id" text PRIMARY KEY NOT NULL,
	"modality" text NOT NULL,
	"provider_id" text NOT NULL,
	"model_name" text NOT NULL,
	"display_name" text,
	"default_language" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "node_samples" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"ts" timestamp with time zone NOT NULL,
	"node" text NOT NULL,
	"source" text NOT NULL,
	"metric" text NOT NULL,
	"labels" jsonb,
	"value" double precision NOT NULL
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"project_id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"daily_budget" numeric(20, 10),
	"budget_action" text DEFAULT 'warn' NOT NULL,
	"default_stack" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"accent" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "providers" (
	"provider_id" text PRIMARY KEY NOT NULL,
	"provider_type" text NOT NULL,
	"api_key_encrypted" text,
	"api_key_masked" text,
	"base_url" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_rules" (
	"rule_id" text PRIMARY KEY NOT NULL,
	"scope_key" text NOT NULL,
	"tenant" text,
	"plan" text,
	"modality" text,
	"provider" text,
	"model" text,
	"sets" text DEFAULT 'price' NOT NULL,
	"markup" numeric(20, 10),
	"fixed" numeric(20, 10),
	"unit" text,
	"input_price_usd" numeric(20, 10),
	"output_price_usd" numeric(20, 10),
	"cached_input_price_usd" numeric(20, 10),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "rate_rules_scopeKey_unique" UNIQUE("scope_key")
);
--> statement-breakpoint
CREATE TABLE "request_model_rollups" (
	"bucket" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"project" text NOT NULL,
	"provider" text NOT NULL,
	"model_id" text NOT NULL,
	"modality" text NOT NULL,
	"is_probe" boolean DEFAULT false NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"input_units" double precision DEFAULT 0 NOT NULL,
	"output_units" double precision DEFAULT 0 NOT NULL,
	"ttfb_count" integer DEFAULT 0 NOT NULL,
	"ttfb_sum_ms" double precision DEFAULT 0 NOT NULL,
	"ttfb_hist" jsonb,
	"latency_count" integer DEFAULT 0 NOT NULL,
	"latency_sum_ms" double precision DEFAULT 0 NOT NULL,
	"latency_hist" jsonb,
	CONSTRAINT "request_model_rollups_key_uq" UNIQUE NULLS NOT DISTINCT("bucket","tenant_id","project","provider","model_id","modality","is_probe")
);
--> statement-breakpoint
CREATE TABLE "request_model_rollups_daily" (
	"bucket" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"project" text NOT NULL,
	"provider" text NOT NULL,
	"model_id" text NOT NULL,
	"modality" text NOT NULL,
	"is_probe" boolean DEFAULT false NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"input_units" double precision DEFAULT 0 NOT NULL,
	"output_units" double precision DEFAULT 0 NOT NULL,
	"ttfb_count" integer DEFAULT 0 NOT NULL,
	"ttfb_sum_ms" double precision DEFAULT 0 NOT NULL,
	"ttfb_hist" jsonb,
	"latency_count" integer DEFAULT 0 NOT NULL,
	"latency_sum_ms" double precision DEFAULT 0 NOT NULL,
	"latency_hist" jsonb,
	CONSTRAINT "request_model_rollups_daily_key_uq" UNIQUE NULLS NOT DISTINCT("bucket","tenant_id","project","provider","model_id","modality","is_probe")
);
--> statement-breakpoint
CREATE TABLE "request_rollups" (
	"bucket" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"project" text NOT NULL,
	"provider" text NOT NULL,
	"model_id" text NOT NULL,
	"modality" text NOT NULL,
	"is_probe" boolean DEFAULT false NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"input_units" double precision DEFAULT 0 NOT NULL,
	"output_units" double precision DEFAULT 0 NOT NULL,
	"ttfb_count" integer DEFAULT 0 NOT NULL,
	"ttfb_sum_ms" double precision DEFAULT 0 NOT NULL,
	"ttfb_hist" jsonb,
	"latency_count" integer DEFAULT 0 NOT NULL,
	"latency_sum_ms" double precision DEFAULT 0 NOT NULL,
	"latency_hist" jsonb,
	CONSTRAINT "request_rollups_key_uq" UNIQUE NULLS NOT DISTINCT("bucket","tenant_id","project","provider","model_id","modality","is_probe")
);
--> statement-breakpoint
CREATE TABLE "request_rollups_daily" (
	"bucket" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"project" text NOT NULL,
	"provider" text NOT NULL,
	"model_id" text NOT NULL,
	"modality" text NOT NULL,
	"is_probe" boolean DEFAULT false NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"input_units" double precision DEFAULT 0 NOT NULL,
	"output_units" double precision DEFAULT 0 NOT NULL,
	"ttfb_count" integer DEFAULT 0 NOT NULL,
	"ttfb_sum_ms" double precision DEFAULT 0 NOT NULL,
	"ttfb_hist" jsonb,
	"latency_count" integer DEFAULT 0 NOT NULL,
	"latency_sum_ms" double precision DEFAULT 0 NOT NULL,
	"latency_hist" jsonb,
	CONSTRAINT "request_rollups_daily_key_uq" UNIQUE NULLS NOT DISTINCT("bucket","tenant_id","project","provider","model_id","modality","is_probe")
);
--> statement-breakpoint
CREATE TABLE "requests" (
	"id" uuid PRIMARY KEY NOT NULL,
	"ts" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"project" text DEFAULT 'default' NOT NULL,
	"session_id" text,
	"room_name" text,
	"agent_id" text,
	"modality" text NOT NULL,
	"model_id" text NOT NULL,
	"provider" text NOT NULL,
	"status" text DEFAULT 'success' NOT NULL,
	"error_message" text,
	"fallback_from" text,
	"ttfb_ms" double precision,
	"total_latency_ms" double precision,
	"cost_usd" numeric(20, 10),
	"rated_price_usd" numeric(20, 10),
	"rate_rule" text,
	"pricing" text DEFAULT 'priced' NOT NULL,
	"input_tokens" bigint,
	"output_tokens" bigint,
	"cached_input_tokens" bigint,
	"audio_seconds" double precision,
	"characters" bigint,
	"input_units" double precision,
	"output_units" double precision,
	"metadata" jsonb,
	"is_probe" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "room_sequences" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text,
	"room_name" text NOT NULL,
	"last_seq" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "room_sequences_room_uq" UNIQUE NULLS NOT DISTINCT("tenant_id","room_name")
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text,
	"project" text DEFAULT 'default' NOT NULL,
	"room_name" text,
	"agent_id" text,
	"started_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone NOT NULL,
	"modalities" text[] DEFAULT '{}'::text[] NOT NULL,
	"request_count" integer DEFAULT 0 NOT NULL,
	"total_cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "turns" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text,
	"session_id" text NOT NULL,
	"room_name" text,
	"turn_index" integer NOT NULL,
	"seq" bigint NOT NULL,
	"caller_speak_start_ms" bigint NOT NULL,
	"caller_speak_end_ms" bigint NOT NULL,
	"agent_speak_start_ms" bigint,
	"agent_speak_end_ms" bigint,
	"response_speed_ms" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "turns_session_turn_uq" UNIQUE("session_id","turn_index")
);
--> statement-breakpoint
CREATE INDEX "agent_presence_seen_idx" ON "agent_presence" USING btree ("last_seen_at");--> statement-breakpoint
CREATE INDEX "audit_log_ts_idx" ON "audit_log" USING btree ("ts");--> statement-breakpoint
CREATE INDEX "audit_log_entity_idx" ON "audit_log" USING btree ("entity_type","entity_id");--> statement-breakpoint
CREATE INDEX "call_events_room_idx" ON "call_events" USING btree ("room_sid");--> statement-breakpoint
CREATE INDEX "call_legs_room_idx" ON "call_legs" USING btree ("room_sid");--> statement-breakpoint
CREATE INDEX "calls_tenant_started_idx" ON "calls" USING btree ("tenant_id","started_at_ms");--> statement-breakpoint
CREATE INDEX "calls_room_name_idx" ON "calls" USING btree ("room_name");--> statement-breakpoint
CREATE INDEX "calls_attempt_idx" ON "calls" USING btree ("attempt_id");--> statement-breakpoint
CREATE INDEX "dead_air_room_idx" ON "dead_air_events" USING btree ("tenant_id","room_name");--> statement-breakpoint
CREATE INDEX "dead_air_room_name_idx" ON "dead_air_events" USING btree ("room_name");--> statement-breakpoint
CREATE INDEX "diag_gates_run_idx" ON "diag_gates" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "diag_runs_finished_idx" ON "diag_runs" USING btree ("finished_at");--> statement-breakpoint
CREATE INDEX "node_samples_node_ts_idx" ON "node_samples" USING btree ("node","ts");--> statement-breakpoint
CREATE INDEX "requests_ts_idx" ON "requests" USING btree ("ts");--> statement-breakpoint
CREATE INDEX "requests_tenant_ts_idx" ON "requests" USING btree ("tenant_id","ts");--> statement-breakpoint
CREATE INDEX "requests_project_ts_idx" ON "requests" USING btree ("project","ts");--> statement-breakpoint
CREATE INDEX "requests_session_idx" ON "requests" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "requests_room_name_idx" ON "requests" USING btree ("room_name");--> statement-breakpoint
CREATE INDEX "sessions_tenant_started_idx" ON "sessions" USING btree ("tenant_id","started_at");--> statement-breakpoint
CREATE INDEX "sessions_started_idx" ON "sessions" USING btree ("started_at");--> statement-breakpoint
CREATE INDEX "sessions_room_idx" ON "sessions" USING btree ("room_name");--> statement-breakpoint
CREATE INDEX "turns_room_seq_idx" ON "turns" USING btree ("tenant_id","room_name","seq");--> statement-breakpoint
CREATE INDEX "turns_room_name_seq_idx" ON "turns" USING btree ("room_name","seq");