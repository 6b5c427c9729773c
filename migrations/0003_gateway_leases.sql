CREATE TABLE "gateway_rate_windows" (
	"provider_id" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"granted" integer NOT NULL,
	"last_claim" integer NOT NULL,
	CONSTRAINT "gateway_rate_windows_provider_id_window_start_pk" PRIMARY KEY("provider_id","window_start")
);
--> statement-breakpoint
CREATE TABLE "gateway_stream_leases" (
	"provider_id" text NOT NULL,
	"replica_id" text NOT NULL,
	"slots" integer NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "gateway_stream_leases_provider_id_replica_id_pk" PRIMARY KEY("provider_id","replica_id")
);
