-- A ranking's span of the hour (src/rollups/fleet-checkpoints.ts) inserts ~one row per agent each
-- hour and period, and a span two hours old is deleted: vacuum this table after a few thousand rows
-- rather than after 20 % of it, so a new span's rows are soon all-visible and the ranking reads them
-- from its index alone (a fresh 10k-row span: a bitmap heap scan of ~4.6 ms instead of ~2.5 ms).
ALTER TABLE "fleet_index_agent_checkpoints" SET (autovacuum_vacuum_insert_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_scale_factor = 0);
