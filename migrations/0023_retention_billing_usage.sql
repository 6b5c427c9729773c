CREATE TABLE "billing_usage_daily" (
	"bucket" timestamp with time zone NOT NULL,
	"tenant_id" text,
	"modality" text NOT NULL,
	"model_id" text NOT NULL,
	"rate_rule" text,
	"requests" bigint DEFAULT 0 NOT NULL,
	"rated_price_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"cost_usd" numeric(20, 10) DEFAULT '0' NOT NULL,
	"unpriced" bigint DEFAULT 0 NOT NULL,
	"uncosted" bigint DEFAULT 0 NOT NULL,
	"input_units" numeric DEFAULT '0' NOT NULL,
	"output_units" numeric DEFAULT '0' NOT NULL,
	CONSTRAINT "billing_usage_daily_key_uq" UNIQUE NULLS NOT DISTINCT("bucket","tenant_id","modality","model_id","rate_rule")
);
--> statement-breakpoint
CREATE TABLE "retention_horizons" (
	"scope" text PRIMARY KEY NOT NULL,
	"before" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "retention_runs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone NOT NULL,
	"duration_ms" integer NOT NULL,
	"deleted" jsonb NOT NULL
);
--> statement-breakpoint
-- Existing rows are folded in once here; from now on ingest keeps the table in step.
INSERT INTO "billing_usage_daily" ("bucket", "tenant_id", "modality", "model_id", "rate_rule", "requests", "rated_price_usd", "cost_usd", "unpriced", "uncosted", "input_units", "output_units")
SELECT date_trunc('day', "ts", 'UTC'), "tenant_id", "modality", "model_id", "rate_rule", count(*),
  coalesce(sum("rated_price_usd"), 0), coalesce(sum("cost_usd"), 0),
  count(*) FILTER (WHERE "rated_price_usd" IS NULL), count(*) FILTER (WHERE "cost_usd" IS NULL),
  coalesce(sum("input_units"::numeric), 0), coalesce(sum("output_units"::numeric), 0)
FROM "requests" GROUP BY 1, 2, 3, 4, 5;
