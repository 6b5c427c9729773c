import { queryOptions } from "@tanstack/react-query";
import { get } from "../client";
import type { CostSeries, DashboardCostReport, LatencyReport, LatencySeries, ModalityLatencyReport, Overview } from "../types";

/**
 * Costs, latency and the overview (GET /api/costs*, /api/latency*, /api/overview): keys and fetchers
 * defined once, so a page and the boot-time prefetch share one cache entry per query.
 */
export const reportQueries = {
  overview: (project: string) => queryOptions({ queryKey: ["overview", project], queryFn: () => get<Overview>("/api/overview", { project }) }),
  costs: (period: string, project: string) =>
    queryOptions({ queryKey: ["costs", period, project], queryFn: () => get<DashboardCostReport>("/api/costs", { period, project }) }),
  /** `bucket` empty lets the server choose the bucket for the period. */
  costSeries: (period: string, bucket: string, project: string) =>
    queryOptions({
      queryKey: ["costs-series", period, bucket, project],
      queryFn: () => get<CostSeries>("/api/costs/series", { period, bucket, project }),
    }),
  latency: (period: string, project: string) =>
    queryOptions({ queryKey: ["latency", period, project], queryFn: () => get<LatencyReport>("/api/latency", { period, project }) }),
  latencySeries: (period: string, project: string, modality: string) =>
    queryOptions({
      queryKey: ["latency-series", period, project, modality],
      queryFn: () => get<LatencySeries>("/api/latency/series", { period, project, modality }),
    }),
  latencyByModality: (period: string, project: string) =>
    queryOptions({
      queryKey: ["latency-modalities", period, project],
      queryFn: () => get<ModalityLatencyReport>("/api/latency/modalities", { period, project }),
    }),
};
