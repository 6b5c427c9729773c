-- A call of this function anywhere in a statement keeps Postgres from planning it parallel: the
-- planner checks the statement for PARALLEL UNSAFE functions before anything else, and then inlines
-- this one to `true`, so it costs nothing at execution. The fleet index's ranking
-- (src/fleet/index-queries.ts) uses it instead of SET LOCAL max_parallel_workers_per_gather = 0, which
-- took a transaction and three more round trips per page.
CREATE OR REPLACE FUNCTION "voxgate_serial_plan"() RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL UNSAFE AS 'SELECT true';
