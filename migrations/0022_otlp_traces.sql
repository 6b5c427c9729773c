CREATE TABLE "otlp_spans" (
	"tenant_id" text,
	"trace_id" text NOT NULL,
	"span_id" text NOT NULL,
	"parent_span_id" text,
	"name" text NOT NULL,
	"start_ms" double precision NOT NULL,
	"end_ms" double precision NOT NULL,
	"status_code" integer DEFAULT 0 NOT NULL,
	"status_message" text,
	"attributes" jsonb NOT NULL,
	"project" text,
	"python" boolean DEFAULT false NOT NULL,
	"mapped" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "otlp_spans_span_tenant_uq" UNIQUE NULLS NOT DISTINCT("trace_id","span_id","tenant_id")
);
--> statement-breakpoint
CREATE TABLE "otlp_traces" (
	"tenant_id" text,
	"trace_id" text NOT NULL,
	"session_id" text NOT NULL,
	"room_name" text,
	"agent_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "otlp_traces_trace_tenant_uq" UNIQUE NULLS NOT DISTINCT("trace_id","tenant_id")
);
--> statement-breakpoint
CREATE INDEX "otlp_spans_created_idx" ON "otlp_spans" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "otlp_traces_created_idx" ON "otlp_traces" USING btree ("created_at");