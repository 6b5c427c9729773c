CREATE TABLE "gateway_budget_leases" (
	"project_id" text NOT NULL,
	"replica_id" text NOT NULL,
	"amount_usd" double precision NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "gateway_budget_leases_project_id_replica_id_pk" PRIMARY KEY("project_id","replica_id")
);
