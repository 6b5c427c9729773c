import { queryOptions } from "@tanstack/react-query";
import { get } from "../client";
import type { RequestLogDetail, RequestLogRecord } from "../types";

export interface LogFilter {
  modality: string;
  project: string;
  status: string;
  limit: string;
}

/** The request log (GET /api/logs, /api/logs/{id}). */
export const logQueries = {
  list: (f: LogFilter) => queryOptions({ queryKey: ["logs", f.modality, f.project, f.status, f.limit], queryFn: () => get<RequestLogRecord[]>("/api/logs", { ...f }) }),
  detail: (id: string) => queryOptions({ queryKey: ["log", id], queryFn: () => get<RequestLogDetail>(`/api/logs/${encodeURIComponent(id)}`) }),
};
