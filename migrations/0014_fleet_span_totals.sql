ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "probe_requests" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "errors" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "turns" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "probe_turns" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Spans built before these columns existed hold zeros in them: drop them all; queries build them again.
DELETE FROM "fleet_index_agent_checkpoints";--> statement-breakpoint
DELETE FROM "fleet_index_checkpoints";
