ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "stt_ttfb_hist" jsonb;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "llm_ttfb_hist" jsonb;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "tts_ttfb_hist" jsonb;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "response_hist" jsonb;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "sketched_rows" bigint;