DROP INDEX "calls_agent_started_idx";--> statement-breakpoint
DROP INDEX "sessions_agent_started_idx";--> statement-breakpoint
CREATE INDEX "calls_agent_started_idx" ON "calls" USING btree ("agent_id","started_at_ms","tenant_id","is_probe");--> statement-breakpoint
CREATE INDEX "sessions_agent_started_idx" ON "sessions" USING btree ("agent_id","started_at","tenant_id");