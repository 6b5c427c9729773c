CREATE TABLE "fleet_index_agent_rollups" (
	"bucket" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"agent_id" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"probe_requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"stt_ttfb_hist" jsonb,
	"llm_ttfb_hist" jsonb,
	"tts_ttfb_hist" jsonb,
	"turns" bigint DEFAULT 0 NOT NULL,
	"probe_turns" bigint DEFAULT 0 NOT NULL,
	"response_hist" jsonb,
	CONSTRAINT "fleet_index_agent_rollups_key_uq" UNIQUE NULLS NOT DISTINCT("bucket","tenant_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "fleet_index_agent_rollups_daily" (
	"bucket" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"agent_id" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"probe_requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"stt_ttfb_hist" jsonb,
	"llm_ttfb_hist" jsonb,
	"tts_ttfb_hist" jsonb,
	"turns" bigint DEFAULT 0 NOT NULL,
	"probe_turns" bigint DEFAULT 0 NOT NULL,
	"response_hist" jsonb,
	CONSTRAINT "fleet_index_agent_rollups_daily_key_uq" UNIQUE NULLS NOT DISTINCT("bucket","tenant_id","agent_id")
);
--> statement-breakpoint
ALTER TABLE "turns" ADD COLUMN "agent_id" text;--> statement-breakpoint
CREATE INDEX "fleet_index_agent_rollups_agent_idx" ON "fleet_index_agent_rollups" USING btree ("agent_id","bucket");--> statement-breakpoint
CREATE INDEX "fleet_index_agent_rollups_daily_agent_idx" ON "fleet_index_agent_rollups_daily" USING btree ("agent_id","bucket");--> statement-breakpoint
CREATE INDEX "calls_agent_started_idx" ON "calls" USING btree ("agent_id","started_at_ms");--> statement-breakpoint
CREATE INDEX "sessions_agent_started_idx" ON "sessions" USING btree ("agent_id","started_at");--> statement-breakpoint
CREATE INDEX "turns_agent_start_idx" ON "turns" USING btree ("agent_id","caller_speak_start_ms");