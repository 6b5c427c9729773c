CREATE TABLE "fleet_index_agent_retired_sessions" (
	"day" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"agent_id" text NOT NULL,
	"sessions" bigint NOT NULL,
	CONSTRAINT "fleet_index_agent_retired_sessions_key_uq" UNIQUE NULLS NOT DISTINCT("agent_id","tenant_id","day")
);
