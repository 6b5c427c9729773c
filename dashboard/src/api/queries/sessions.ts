import { infiniteQueryOptions, queryOptions } from "@tanstack/react-query";
import { get, getPage } from "../client";
import type { RoomLatencyRecord, SessionDeadAir, SessionDetail, SessionReplay, SessionRow, SessionTranscript, SessionTurns } from "../types";

const sessionPath = (id: string) => `/api/sessions/${encodeURIComponent(id)}`;
/** A tenant's session is addressed with ?tenant= (operator keys); "" means the key's own. */
const tenantQuery = (tenant: string) => (tenant === "" ? {} : { tenant });

/** Sessions and their parts (GET /api/sessions*), and a room's live latency (GET /v1/rooms/{room}/latency). */
export const sessionQueries = {
  list: (project: string, room: string) =>
    infiniteQueryOptions({
      queryKey: ["sessions", project, room],
      queryFn: ({ pageParam }) => getPage<SessionRow[]>("/api/sessions", { project, room, limit: 50, cursor: pageParam }),
      initialPageParam: "",
      getNextPageParam: (last) => last.next ?? undefined,
    }),
  detail: (id: string, tenant: string) =>
    queryOptions({ queryKey: ["session", id, tenant], queryFn: () => get<SessionDetail>(sessionPath(id), tenantQuery(tenant)) }),
  turns: (id: string, tenant: string) =>
    queryOptions({ queryKey: ["session-turns", id, tenant], queryFn: () => get<SessionTurns>(`${sessionPath(id)}/turns`, tenantQuery(tenant)) }),
  deadAir: (id: string, tenant: string) =>
    queryOptions({ queryKey: ["session-dead-air", id, tenant], queryFn: () => get<SessionDeadAir>(`${sessionPath(id)}/dead-air`, tenantQuery(tenant)) }),
  transcript: (id: string, tenant: string) =>
    queryOptions({ queryKey: ["session-transcript", id, tenant], queryFn: () => get<SessionTranscript>(`${sessionPath(id)}/transcript`, tenantQuery(tenant)) }),
  replay: (id: string, tenant: string) =>
    queryOptions({ queryKey: ["session-replay", id, tenant], queryFn: () => get<SessionReplay>(`${sessionPath(id)}/replay`, tenantQuery(tenant)) }),
  /** `since` > 0 asks only for the turns after that sequence number (live polling). */
  roomLatency: (room: string, since: number) =>
    queryOptions({
      queryKey: ["room-latency", room, since],
      queryFn: () => get<RoomLatencyRecord>(`/v1/rooms/${encodeURIComponent(room)}/latency`, { since_turn: since || undefined }),
    }),
};
