import { useQuery } from "@tanstack/react-query";
import { manageQueries } from "../api/queries/manage";

/** Project ids for the project filters (every page offers the same list). */
export function useProjectOptions(): { value: string; label: string }[] {
  const q = useQuery({ ...manageQueries.projects(), staleTime: 60_000 });
  return [{ value: "", label: "All projects" }, ...(q.data?.projects ?? []).map((p) => ({ value: p.id, label: p.name ?? p.id }))];
}

export const COST_PERIODS = ["today", "week", "month", "all"] as const;
export const LATENCY_PERIODS = ["today", "week", "month"] as const;
export const MODALITIES = ["stt", "llm", "tts"] as const;
export const PERIOD_HINT: Record<string, string> = {
  today: "last 24 hours",
  week: "last 7 days",
  month: "last 30 days",
  all: "since the first request",
};
