-- Tenant in every unique key of telemetry (issue 9.4): request ids, session ids, turn and dead-air keys are
-- unique per tenant; NULL tenant (operator rows) counts as one more tenant (NULLS NOT DISTINCT, Postgres 15+).
ALTER TABLE "dead_air_events" DROP CONSTRAINT "dead_air_session_start_uq";--> statement-breakpoint
ALTER TABLE "turns" DROP CONSTRAINT "turns_session_turn_uq";--> statement-breakpoint
ALTER TABLE "requests" DROP CONSTRAINT "requests_pkey";--> statement-breakpoint
ALTER TABLE "sessions" DROP CONSTRAINT "sessions_pkey";--> statement-breakpoint
ALTER TABLE "dead_air_events" ADD CONSTRAINT "dead_air_session_start_tenant_uq" UNIQUE NULLS NOT DISTINCT("session_id","started_at_ms","tenant_id");--> statement-breakpoint
ALTER TABLE "requests" ADD CONSTRAINT "requests_id_tenant_uq" UNIQUE NULLS NOT DISTINCT("id","tenant_id");--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_id_tenant_uq" UNIQUE NULLS NOT DISTINCT("id","tenant_id");--> statement-breakpoint
ALTER TABLE "turns" ADD CONSTRAINT "turns_session_turn_tenant_uq" UNIQUE NULLS NOT DISTINCT("session_id","turn_index","tenant_id");