import { type Command, InvalidArgumentError } from "commander";
import { z } from "zod";
import { formatLatencyReport, latencyReport } from "../sessions/latency-report.js";
import { isLookupSafe } from "../sessions/params.js";
import { printAnswer, withJsonOption } from "./output.js";
import { withStore } from "./store.js";

function parseSince(value: string): Date {
  const ok = z.iso.date().safeParse(value).success || z.iso.datetime({ offset: true }).safeParse(value).success;
  if (!ok) throw new InvalidArgumentError("--since must be an ISO-8601 date or date-time, e.g. 2026-11-21T00:00:00Z");
  return new Date(value.length === 10 ? `${value}T00:00:00Z` : value);
}

function parseRoom(value: string): string {
  if (!isLookupSafe(value)) throw new InvalidArgumentError("--room must be a room name");
  return value;
}

/** `voxgate latency`: response speed and per-modality TTFB over the store, via the shared summary routine. */
export function registerLatency(program: Command): void {
  withJsonOption(
    program
      .command("latency")
      .description("report response speed (e2e) and per-modality TTFB percentiles over the store")
      .option("--room <room>", "one room (the same aggregates as GET /v1/rooms/{room}/latency)", parseRoom)
      .option("--since <iso>", "only samples at or after this time (not with --room)", parseSince),
    "print JSON instead of a table",
  ).action(async (o: { room?: string; since?: Date; json?: boolean }) => {
    if (o.room !== undefined && o.since !== undefined) {
      process.stderr.write("voxgate: --since cannot be combined with --room (a room report covers the whole call)\n");
      process.exit(2);
    }
    await withStore(async ({ database }) => {
      const report = await latencyReport(database.db, { room: o.room, since: o.since });
      if (!report) {
        process.stderr.write(`voxgate: no room named ${JSON.stringify(o.room)} in the store\n`);
        process.exitCode = 1;
        return;
      }
      printAnswer(o, report, formatLatencyReport);
    });
  });
}
