CREATE TABLE "fleet_index_agent_checkpoints" (
	"at" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"agent_id" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"row_count" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "fleet_index_agent_checkpoints_key_uq" UNIQUE NULLS NOT DISTINCT("at","tenant_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "fleet_index_checkpoints" (
	"at" timestamp with time zone PRIMARY KEY NOT NULL,
	"built_at" timestamp with time zone DEFAULT now() NOT NULL
);
