DROP INDEX "requests_session_idx";--> statement-breakpoint
DROP INDEX "requests_room_name_idx";--> statement-breakpoint
CREATE INDEX "requests_session_idx" ON "requests" USING btree ("session_id") WHERE "requests"."session_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "requests_room_name_idx" ON "requests" USING btree ("room_name") WHERE "requests"."room_name" IS NOT NULL;