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
CREATE INDEX "fleet_index_agent_rollups_daily_rank_idx" ON "fleet_index_agent_rollups_daily" USING btree ("bucket","tenant_id","agent_id","cost_usd","requests");--> statement-breakpoint
-- Hand-added: fill the month sums from the day rows already there (exact: a month is whole days), so
-- period=all stays complete on a database upgraded with history. A no-op on a new database.
INSERT INTO "fleet_index_agent_rollups_monthly" ("bucket", "tenant_id", "agent_id", "requests", "probe_requests", "errors", "cost_usd", "rated_price_usd", "turns", "probe_turns")
SELECT date_trunc('month', "bucket", 'UTC'), "tenant_id", "agent_id", sum("requests"), sum("probe_requests"), sum("errors"), sum("cost_usd"), sum("rated_price_usd"), sum("turns"), sum("probe_turns")
FROM "fleet_index_agent_rollups_daily" GROUP BY 1, 2, 3;
