ALTER TABLE "fleet_index_agent_rollups_monthly" ADD COLUMN "stt_ttfb_hist" jsonb;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_rollups_monthly" ADD COLUMN "llm_ttfb_hist" jsonb;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_rollups_monthly" ADD COLUMN "tts_ttfb_hist" jsonb;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_rollups_monthly" ADD COLUMN "response_hist" jsonb;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_rollups_monthly" ADD COLUMN "sketched_rows" bigint;