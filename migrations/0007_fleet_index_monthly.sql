CREATE TABLE "fleet_index_agent_rollups_monthly" (
	"bucket" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"agent_id" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"probe_requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"turns" bigint DEFAULT 0 NOT NULL,
	"probe_turns" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "fleet_index_agent_rollups_monthly_key_uq" UNIQUE NULLS NOT DISTINCT("bucket","tenant_id","agent_id")
);
--> statement-breakpoint
CREATE INDEX "fleet_index_agent_rollups_monthly_agent_idx" ON "fleet_index_agent_rollups_monthly" USING btree ("agent_id","bucket");--> statement-breakpoint
CREATE INDEX "fleet_index_agent_rollups_daily_rank_idx" ON "fleet_index_agent_rollups_daily" USING btree ("bucket","tenant_id","agent_id","cost_usd","requests");