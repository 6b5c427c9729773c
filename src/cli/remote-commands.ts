import { pipeline } from "node:stream/promises";
import { type Command, InvalidArgumentError, Option } from "commander";
import { type Query, VoxgateApi } from "../client/api.js";
import { type RemoteOptions, remoteTarget, withServerOptions } from "./remote.js";
import { printAnswer, printJson, withJsonOption } from "./output.js";
import { keyValues, namedRows, table } from "./table.js";

/**
 * The commands that ask a running server (--url/--key, or VOXGATE_URL/VOXGATE_API_KEY): each is one
 * API route, so the answer, the scopes and the tenant are the server's. `--json` prints the route's
 * JSON as it came; without it a table. A refusal exits as every command does (src/cli/errors.ts).
 */
interface Output extends RemoteOptions {
  json?: boolean;
}

const write = (text: string): void => {
  process.stdout.write(text);
};

async function withApi<T>(o: RemoteOptions, fn: (api: VoxgateApi) => Promise<T>): Promise<T> {
  const target = remoteTarget(o);
  const api = new VoxgateApi(target.url, target.key);
  try {
    return await fn(api);
  } finally {
    await api.close();
  }
}

/** A command with --url, --key and --json that prints one GET route's answer. */
function remote(parent: Command, name: string, description: string): Command {
  return withJsonOption(withServerOptions(parent.command(name).description(description)), "print the route's JSON");
}

function positiveInt(value: string): number {
  if (!/^\d{1,7}$/.test(value) || Number(value) < 1) throw new InvalidArgumentError("must be a positive whole number");
  return Number(value);
}

/** YYYY-MM-DD or ISO-8601, as the server reads it (validated there too). */
function isoDate(value: string): string {
  const ok = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) && !Number.isNaN(Date.parse(value));
  if (!ok) throw new InvalidArgumentError("expected YYYY-MM-DD or an ISO-8601 date-time, e.g. 2026-11-01 or 2026-11-01T00:00:00Z");
  return value;
}

async function show(o: Output, path: string, query: Query, render: (body: never) => string): Promise<void> {
  await withApi(o, async (api) => {
    const body = await api.get<unknown>(path, query);
    printAnswer(o, body as never, render);
  });
}

type CostLine = {
  cost: number;
  requests: number;
};

export function registerRemoteCommands(program: Command): void {
  remote(program, "status", "providers, model and project counts (GET /v1/status)").action((o: Output) =>
    show(o, "/v1/status", {}, (b: { providers: Record<string, { configured: boolean; type: string }>; model_count: number; project_count: number }) =>
      `${table(namedRows(b.providers, "provider"), ["provider", "configured", "type"])}models: ${b.model_count}  projects: ${b.project_count}\n`,
    ),
  );

  remote(program, "costs", "spend over a period, by provider, model and project (GET /v1/costs)")
    .addOption(new Option("--period <period>", "rolling window").choices(["today", "week", "month", "all"]))
    .option("--project <project>", "one project")
    .action((o: Output & { period?: string; project?: string }) =>
      show(o, "/v1/costs", { period: o.period, project: o.project }, (b: { period: string; project: string | null; total: number; requests: number; by_provider: Record<string, CostLine>; by_model: Record<string, CostLine>; by_project: Record<string, CostLine> }) =>
        [
          `period: ${b.period}  project: ${b.project ?? "all"}  total: $${b.total}  requests: ${b.requests}\n`,
          `\n${table(namedRows(b.by_provider, "provider"), ["provider", "cost", "requests"])}`,
          `\n${table(namedRows(b.by_model, "model"), ["model", "cost", "requests"])}`,
          `\n${table(namedRows(b.by_project, "project"), ["project", "cost", "requests"])}`,
        ].join(""),
      ),
    );

  remote(program, "logs", "the newest request records (GET /api/logs)")
    .addOption(new Option("--modality <modality>").choices(["stt", "llm", "tts"]))
    .addOption(new Option("--status <status>").choices(["success", "error", "fallback"]))
    .option("--limit <n>", "rows (1-1000, default 50)", positiveInt)
    .option("--project <project>", "one project")
    .action((o: Output & { modality?: string; status?: string; limit?: number; project?: string }) =>
      show(o, "/api/logs", { modality: o.modality, status: o.status, limit: o.limit, project: o.project }, (rows: Record<string, unknown>[]) =>
        table(rows, ["timestamp", "project", "modality", "model_id", "status", "cost_usd", "ttfb_ms", "total_latency_ms", "session_id"]),
      ),
    );

  remote(program, "sessions", "sessions, newest first (GET /v1/sessions)")
    .option("--project <project>", "one project")
    .option("--room <room>", "one room")
    .option("--limit <n>", "rows (1-1000, default 100)", positiveInt)
    .option("--cursor <cursor>", "the next page (printed after a full page)")
    .action((o: Output & { project?: string; room?: string; limit?: number; cursor?: string }) =>
      withApi(o, async (api) => {
        const { body, headers } = await api.json<Record<string, unknown>[]>("GET", "/v1/sessions", { query: { project: o.project, room: o.room, limit: o.limit, cursor: o.cursor } });
        const next = headers["x-next-cursor"];
        if (o.json) return printJson(body);
        write(table(body, ["id", "project", "room_name", "started_at", "ended_at", "request_count", "total_cost_usd", "modalities"]));
        if (typeof next === "string") process.stderr.write(`more: --cursor ${next}\n`);
      }),
    );

  remote(program, "session <session_id>", "one session with its cost per modality (GET /v1/sessions/{session_id})")
    .option("--tenant <tenant_id>", "operator keys: the tenant of an id several tenants used")
    .action((id: string, o: Output & { tenant?: string }) =>
      show(o, `/v1/sessions/${encodeURIComponent(id)}`, { tenant: o.tenant }, (b: Record<string, unknown> & { by_modality: Record<string, Record<string, unknown>> }) => {
        const { by_modality, ...rest } = b;
        return `${keyValues(rest)}\n${table(namedRows(by_modality, "modality"), ["modality", "cost", "request_count"])}`;
      }),
    );

  remote(program, "calls", "calls (LiveKit rooms), newest first (GET /api/calls)")
    .option("--limit <n>", "rows", positiveInt)
    .action((o: Output & { limit?: number }) =>
      show(o, "/api/calls", { limit: o.limit }, (rows: Record<string, unknown>[]) =>
        table(rows, ["room_name", "project", "origin", "channel", "started_at_ms", "ended_at_ms", "leg_count", "end_reason", "is_probe"]),
      ),
    );

  withServerOptions(program.command("export-costs").description("every request record in [from, to) as CSV or JSON, streamed to stdout (GET /v1/costs/export)"))
    .requiredOption("--from <date>", "window start, inclusive (YYYY-MM-DD or ISO-8601)", isoDate)
    .requiredOption("--to <date>", "window end, exclusive (YYYY-MM-DD or ISO-8601)", isoDate)
    .addOption(new Option("--format <format>", "csv (header row, one row per record) or json (one array)").choices(["csv", "json"]).default("csv"))
    .option("--json", "the same as --format json")
    .action((o: Output & { from: string; to: string; format: string }) =>
      withApi(o, async (api) => {
        const res = await api.open("GET", "/v1/costs/export", { query: { from: o.from, to: o.to, format: o.json ? "json" : o.format } });
        // Piped chunk by chunk: stdout's backpressure paces the download, nothing is held whole.
        await pipeline(res.body, process.stdout, { end: false });
      }),
    );

  const rates = program.commands.find((c) => c.name() === "rates") ?? program.command("rates");
  remote(rates, "gaps", "models recorded without a price, from a running server (GET /v1/billing/rate-card/gaps)")
    .option("--project <project>", "one project")
    .option("--since <date>", "only records since (YYYY-MM-DD or ISO-8601)", isoDate)
    .option("--tenant <tenant_id>", "one tenant (operator keys)")
    .action((o: Output & { project?: string; since?: string; tenant?: string }) =>
      show(o, "/v1/billing/rate-card/gaps", { project: o.project, since: o.since, tenant: o.tenant }, (b: { gaps: Record<string, unknown>[] }) =>
        table(b.gaps, ["model_id", "modality", "provider", "requests", "unknown_requests", "unrated_requests", "last_seen"]),
      ),
    );

  remote(program, "rotate-secret", "re-encrypt stored provider keys under the server's current VOXGATE_SECRET (POST /v1/secrets/rotate)").action((o: Output) =>
    withApi(o, async (api) => {
      const { body } = await api.json<{ reencrypted: number; unreadable: number }>("POST", "/v1/secrets/rotate");
      if (o.json) return printJson(body);
      write(`re-encrypted: ${body.reencrypted}  unreadable: ${body.unreadable}\n`);
      if (body.unreadable > 0) process.stderr.write("unreadable rows were made with a secret the server has not loaded: add it to VOXGATE_SECRET_PREVIOUS and retry\n");
    }),
  );
}
