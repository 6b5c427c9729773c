-- Checkpoints become spans [from_at, at): the rows built so far are from -infinity, the column's default.
ALTER TABLE "fleet_index_checkpoints" ADD COLUMN "from_at" timestamp with time zone DEFAULT '-infinity'::timestamptz NOT NULL;--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD COLUMN "from_at" timestamp with time zone DEFAULT '-infinity'::timestamptz NOT NULL;--> statement-breakpoint
ALTER TABLE "fleet_index_checkpoints" DROP CONSTRAINT "fleet_index_checkpoints_pkey";--> statement-breakpoint
ALTER TABLE "fleet_index_checkpoints" ADD CONSTRAINT "fleet_index_checkpoints_from_at_at_pk" PRIMARY KEY("from_at","at");--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" DROP CONSTRAINT "fleet_index_agent_checkpoints_key_uq";--> statement-breakpoint
ALTER TABLE "fleet_index_agent_checkpoints" ADD CONSTRAINT "fleet_index_agent_checkpoints_span_key_uq" UNIQUE NULLS NOT DISTINCT("from_at","at","tenant_id","agent_id");
