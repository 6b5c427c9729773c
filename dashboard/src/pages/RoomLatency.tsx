import { useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { sessionQueries } from "../api/queries/sessions";
import type { RoomLatencyRecord } from "../api/types";
import { Card, ErrorBox, Loading } from "../ui/components";
import { count, ms } from "../ui/format";

/** Room latency; while the call is live, polls with since_turn and appends only the new turns. */
export function RoomLatency({ room, live }: { room: string; live: boolean }) {
  const [seen, setSeen] = useState<RoomLatencyRecord["turns"]>([]);
  const since = seen.length > 0 ? (seen[seen.length - 1]?.seq ?? 0) : 0;
  const q = useQuery({ ...sessionQueries.roomLatency(room, since), refetchInterval: live ? 5_000 : false });
  useEffect(() => {
    const fresh = q.data?.turns ?? [];
    if (fresh.length > 0) setSeen((old) => [...old, ...fresh.filter((t) => !old.some((o) => o.seq === t.seq))]);
  }, [q.data]);
  return (
    <Card title={`Room ${room}${live ? " (live)" : ""}`}>
      {q.isPending ? <Loading /> : q.isError ? <ErrorBox error={q.error} action="read room latency" /> : (
        <dl className="kv" data-testid="room-latency">
          <dt>Turns</dt>
          <dd className="num">{count(q.data.turn_count)}</dd>
          <dt>Response p50</dt>
          <dd className="num">{ms(q.data.e2e_ms?.p50)}</dd>
          <dt>Response p95</dt>
          <dd className="num strong">{ms(q.data.e2e_ms?.p95)}</dd>
          {Object.entries(q.data.components).map(([k, v]) => (
            <div key={k} className="contents">
              <dt>{k.replace(/_ms$/, "").replace(/_/g, " ")} p95</dt>
              <dd className="num">{ms(v?.p95)}</dd>
            </div>
          ))}
        </dl>
      )}
    </Card>
  );
}
