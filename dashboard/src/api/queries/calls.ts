import { queryOptions } from "@tanstack/react-query";
import { get } from "../client";
import type { CallDetail, CallRow } from "../types";

/** Calls (GET /api/calls, /api/calls/{ref}); `before` is the paging cursor (epoch ms). */
export const callQueries = {
  list: (limit: string, before: string) => queryOptions({ queryKey: ["calls", limit, before], queryFn: () => get<CallRow[]>("/api/calls", { limit, before }) }),
  detail: (ref: string) => queryOptions({ queryKey: ["call", ref], queryFn: () => get<CallDetail>(`/api/calls/${encodeURIComponent(ref)}`) }),
};
