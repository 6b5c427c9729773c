CREATE INDEX "dead_air_room_name_idx" ON "dead_air_events" USING btree ("room_name");--> statement-breakpoint
CREATE INDEX "turns_room_name_seq_idx" ON "turns" USING btree ("room_name","seq");