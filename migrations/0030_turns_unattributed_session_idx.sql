DROP INDEX "turns_agent_start_idx";--> statement-breakpoint
CREATE INDEX "turns_unattributed_session_idx" ON "turns" USING btree ("session_id") WHERE "turns"."agent_id" IS NULL;--> statement-breakpoint
CREATE INDEX "turns_agent_start_idx" ON "turns" USING btree ("agent_id","caller_speak_start_ms") WHERE "turns"."agent_id" IS NOT NULL;