CREATE TABLE "fleet_index_agent_session_versions" (
	"tenant_id" text,
	"agent_id" text NOT NULL,
	"version" bigint DEFAULT 1 NOT NULL,
	CONSTRAINT "fleet_index_agent_session_versions_key_uq" UNIQUE NULLS NOT DISTINCT("agent_id","tenant_id")
);
--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "sessions" bigint;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "sessions_version" bigint;