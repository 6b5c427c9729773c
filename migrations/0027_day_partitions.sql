-- Day partitions for the raw per-call tables (issue 37): requests, turns, dead_air_events, node_samples and
-- call_events become PARTITION BY RANGE on their time column, one partition per UTC day plus a DEFAULT
-- partition (a write for a day without a partition never fails). Each table is converted the same way:
-- the old table is renamed, a partitioned one LIKE it takes its name, the partitions for the days its rows
-- cover (up to 400 days back; older rows go to the DEFAULT partition) and for today .. today+3 are created,
-- the rows are copied, the old table dropped, then keys and indexes are built on the parent (each partition
-- gets its own). Keys include the partition key, as Postgres requires. The copy rewrites every row once and
-- rebuilds every index, holding the tables locked meanwhile: docs/operations.md gives its cost at scale.
-- The server then keeps partitions ahead (src/retention/partitions.ts); the Drizzle schema describes the
-- columns and keys only.
ALTER TABLE "requests" RENAME TO "requests_unpartitioned";--> statement-breakpoint
ALTER TABLE "turns" RENAME TO "turns_unpartitioned";--> statement-breakpoint
ALTER TABLE "dead_air_events" RENAME TO "dead_air_events_unpartitioned";--> statement-breakpoint
ALTER TABLE "node_samples" RENAME TO "node_samples_unpartitioned";--> statement-breakpoint
ALTER TABLE "call_events" RENAME TO "call_events_unpartitioned";--> statement-breakpoint
CREATE TABLE "requests" (LIKE "requests_unpartitioned" INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE ("ts");--> statement-breakpoint
CREATE TABLE "turns" (LIKE "turns_unpartitioned" INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE ("caller_speak_start_ms");--> statement-breakpoint
CREATE TABLE "dead_air_events" (LIKE "dead_air_events_unpartitioned" INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE ("started_at_ms");--> statement-breakpoint
CREATE TABLE "node_samples" (LIKE "node_samples_unpartitioned" INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE ("ts");--> statement-breakpoint
CREATE TABLE "call_events" (LIKE "call_events_unpartitioned" INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE ("created_at_s");--> statement-breakpoint
ALTER TABLE "call_events" ALTER COLUMN "created_at_s" SET NOT NULL;--> statement-breakpoint
DO $$
DECLARE
  t record;
  d date;
  lo_day date := (now() AT TIME ZONE 'UTC')::date - 400;
  hi_day date := (now() AT TIME ZONE 'UTC')::date + 4;
  lo text;
  hi text;
  day_of text;
  bound_of text;
BEGIN
  FOR t IN SELECT * FROM (VALUES ('requests', 'ts', 'ts'), ('turns', 'caller_speak_start_ms', 'ms'),
      ('dead_air_events', 'started_at_ms', 'ms'), ('node_samples', 'ts', 'ts'), ('call_events', 'created_at_s', 's'))
      AS v(name, col, unit) LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', t.name || '_default', t.name);
    -- A UTC day's first value in the column's unit (timestamptz, epoch ms, epoch s), and a value's day.
    bound_of := CASE t.unit WHEN 'ts' THEN '(%s::timestamp AT TIME ZONE ''UTC'')'
      WHEN 'ms' THEN '(extract(epoch FROM %s::timestamp)::bigint * 1000)' ELSE '(extract(epoch FROM %s::timestamp)::bigint)' END;
    day_of := CASE t.unit WHEN 'ts' THEN '(%I AT TIME ZONE ''UTC'')::date'
      WHEN 'ms' THEN '(to_timestamp(%I / 1000.0) AT TIME ZONE ''UTC'')::date' ELSE '(to_timestamp(%I) AT TIME ZONE ''UTC'')::date' END;
    lo := format(bound_of, quote_literal(lo_day));
    hi := format(bound_of, quote_literal(hi_day));
    FOR d IN EXECUTE format('SELECT DISTINCT ' || day_of || ' FROM %I WHERE %I >= ' || lo || ' AND %I < ' || hi
        || ' UNION SELECT generate_series(%L::date - 1, %L::date + 3, interval ''1 day'')::date ORDER BY 1',
        t.col, t.name || '_unpartitioned', t.col, t.col, hi_day - 4, hi_day - 4) LOOP
      EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (' || bound_of || ') TO (' || bound_of || ')',
        t.name || '_p' || to_char(d, 'YYYYMMDD'), t.name, quote_literal(d), quote_literal(d + 1));
    END LOOP;
  END LOOP;
END $$;--> statement-breakpoint
INSERT INTO "requests" SELECT * FROM "requests_unpartitioned";--> statement-breakpoint
INSERT INTO "turns" SELECT * FROM "turns_unpartitioned";--> statement-breakpoint
INSERT INTO "dead_air_events" SELECT * FROM "dead_air_events_unpartitioned";--> statement-breakpoint
INSERT INTO "node_samples" SELECT * FROM "node_samples_unpartitioned";--> statement-breakpoint
INSERT INTO "call_events" (event_id, room_sid, event, participant_sid, track_sid, created_at_s, payload, received_at)
  SELECT event_id, room_sid, event, participant_sid, track_sid, coalesce(created_at_s, 0), payload, received_at
  FROM "call_events_unpartitioned";--> statement-breakpoint
ALTER SEQUENCE "turns_id_seq" OWNED BY "turns"."id";--> statement-breakpoint
ALTER SEQUENCE "dead_air_events_id_seq" OWNED BY "dead_air_events"."id";--> statement-breakpoint
ALTER SEQUENCE "node_samples_id_seq" OWNED BY "node_samples"."id";--> statement-breakpoint
DROP TABLE "requests_unpartitioned";--> statement-breakpoint
DROP TABLE "turns_unpartitioned";--> statement-breakpoint
DROP TABLE "dead_air_events_unpartitioned";--> statement-breakpoint
DROP TABLE "node_samples_unpartitioned";--> statement-breakpoint
DROP TABLE "call_events_unpartitioned";--> statement-breakpoint
ALTER TABLE "call_events" ADD CONSTRAINT "call_events_event_id_created_at_s_pk" PRIMARY KEY("event_id","created_at_s");--> statement-breakpoint
ALTER TABLE "dead_air_events" ADD CONSTRAINT "dead_air_events_id_started_at_ms_pk" PRIMARY KEY("id","started_at_ms");--> statement-breakpoint
ALTER TABLE "node_samples" ADD CONSTRAINT "node_samples_id_ts_pk" PRIMARY KEY("id","ts");--> statement-breakpoint
ALTER TABLE "turns" ADD CONSTRAINT "turns_id_caller_speak_start_ms_pk" PRIMARY KEY("id","caller_speak_start_ms");--> statement-breakpoint
ALTER TABLE "requests" ADD CONSTRAINT "requests_id_ts_tenant_uq" UNIQUE NULLS NOT DISTINCT("id","ts","tenant_id");--> statement-breakpoint
ALTER TABLE "turns" ADD CONSTRAINT "turns_session_turn_start_tenant_uq" UNIQUE NULLS NOT DISTINCT("session_id","turn_index","caller_speak_start_ms","tenant_id");--> statement-breakpoint
ALTER TABLE "dead_air_events" ADD CONSTRAINT "dead_air_session_start_tenant_uq" UNIQUE NULLS NOT DISTINCT("session_id","started_at_ms","tenant_id");--> statement-breakpoint
CREATE INDEX "call_events_room_idx" ON "call_events" USING btree ("room_sid");--> statement-breakpoint
CREATE INDEX "dead_air_room_idx" ON "dead_air_events" USING btree ("tenant_id","room_name");--> statement-breakpoint
CREATE INDEX "dead_air_room_name_idx" ON "dead_air_events" USING btree ("room_name");--> statement-breakpoint
CREATE INDEX "node_samples_node_ts_idx" ON "node_samples" USING btree ("node","ts");--> statement-breakpoint
CREATE INDEX "requests_ts_idx" ON "requests" USING btree ("ts");--> statement-breakpoint
CREATE INDEX "requests_tenant_ts_idx" ON "requests" USING btree ("tenant_id","ts");--> statement-breakpoint
CREATE INDEX "requests_project_ts_idx" ON "requests" USING btree ("project","ts");--> statement-breakpoint
CREATE INDEX "requests_session_idx" ON "requests" USING btree ("session_id") WHERE "requests"."session_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "requests_room_name_idx" ON "requests" USING btree ("room_name") WHERE "requests"."room_name" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "turns_room_seq_idx" ON "turns" USING btree ("tenant_id","room_name","seq");--> statement-breakpoint
CREATE INDEX "turns_room_name_seq_idx" ON "turns" USING btree ("room_name","seq");--> statement-breakpoint
CREATE INDEX "turns_agent_start_idx" ON "turns" USING btree ("agent_id","caller_speak_start_ms");--> statement-breakpoint
CREATE INDEX "turns_attributed_start_idx" ON "turns" USING btree ("caller_speak_start_ms") WHERE "turns"."agent_id" IS NOT NULL;
