import { queryOptions } from "@tanstack/react-query";
import { get } from "../client";
import type { FleetIndex, RosterResponse } from "../types";

/** The live roster (GET /v1/agents) and the fleet index (GET /api/agents). */
export const fleetQueries = {
  roster: () => queryOptions({ queryKey: ["agents"], queryFn: () => get<RosterResponse>("/v1/agents"), refetchInterval: 15_000 }),
  index: (period: string, sort: string, offset: number, limit: number) =>
    queryOptions({
      queryKey: ["fleet-index", period, sort, offset, limit],
      queryFn: () => get<FleetIndex>("/api/agents", { period, sort, offset: offset || null, limit }),
    }),
};
