import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useParams } from "react-router";
import { getPage, get } from "../api/client";
import type { RoomLatencyRecord, SessionDeadAir, SessionDetail, SessionReplay, SessionRow, SessionTranscript, SessionTurns } from "../api/types";
import { Badge, Card, Empty, ErrorBox, Loading, Money, Page, QueryView, Select, statusTone, Time, Tile, useParam } from "../ui/components";
import { count, duration, ms } from "../ui/format";
import { useProjectOptions } from "../ui/hooks";

export function SessionsPage() {
  const [project, setProject] = useParam("project");
  const [room, setRoom] = useParam("room");
  const projects = useProjectOptions();
  const pages = useInfiniteQuery({
    queryKey: ["sessions", project, room],
    queryFn: ({ pageParam }) => getPage<SessionRow[]>("/api/sessions", { project, room, limit: 50, cursor: pageParam }),
    initialPageParam: "",
    getNextPageParam: (last) => last.next ?? undefined,
  });
  const rows = pages.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <Page
      title="Sessions"
      actions={
        <>
          <label className="field inline">
            <span>Room</span>
            <input type="search" defaultValue={room} placeholder="room name" onKeyDown={(e) => e.key === "Enter" && setRoom(e.currentTarget.value.trim())} />
          </label>
          <Select label="Project" value={project} onChange={setProject} options={projects} />
        </>
      }
    >
      <Card wide>
        {pages.isPending ? <Loading /> : pages.isError ? <ErrorBox error={pages.error} action="read sessions" /> : rows.length === 0 ? (
          <Empty>No sessions recorded for this filter.</Empty>
        ) : (
          <>
            <table data-testid="sessions-table">
              <thead>
                <tr>
                  <th scope="col">Session</th>
                  <th scope="col">Started</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Project</th>
                  <th scope="col">Room</th>
                  <th scope="col">Modalities</th>
                  <th scope="col" className="r">
                    Requests
                  </th>
                  <th scope="col" className="r">
                    Cost
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((s) => (
                  <tr key={`${s.tenant_id ?? ""}/${s.id}`}>
                    <td>
                      <Link to={`/sessions/${encodeURIComponent(s.id)}${s.tenant_id === null ? "" : `?tenant=${encodeURIComponent(s.tenant_id)}`}`}>{s.id}</Link>
                    </td>
                    <td>
                      <Time value={s.started_at} />
                    </td>
                    <td className="num">{duration(Date.parse(s.ended_at) - Date.parse(s.started_at))}</td>
                    <td>{s.project}</td>
                    <td>{s.room_name ?? <span className="muted">—</span>}</td>
                    <td>
                      {s.modalities.map((m) => (
                        <Badge key={m} tone="info">
                          {m}
                        </Badge>
                      ))}
                    </td>
                    <td className="r num">{count(s.request_count)}</td>
                    <td className="r">
                      <Money value={s.total_cost_usd} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {pages.hasNextPage ? (
              <button type="button" className="secondary" onClick={() => pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
                {pages.isFetchingNextPage ? "Loading…" : "Older sessions"}
              </button>
            ) : null}
          </>
        )}
      </Card>
    </Page>
  );
}

const LIVE_MS = 120_000;

export function SessionDetailPage() {
  const id = useParams().id ?? "";
  const [tenant] = useParam("tenant");
  const base = `/api/sessions/${encodeURIComponent(id)}`;
  const tq = tenant === "" ? {} : { tenant };
  const detail = useQuery({ queryKey: ["session", id, tenant], queryFn: () => get<SessionDetail>(base, tq) });
  const turns = useQuery({ queryKey: ["session-turns", id, tenant], queryFn: () => get<SessionTurns>(`${base}/turns`, tq) });
  const dead = useQuery({ queryKey: ["session-dead-air", id, tenant], queryFn: () => get<SessionDeadAir>(`${base}/dead-air`, tq) });
  const transcript = useQuery({ queryKey: ["session-transcript", id, tenant], queryFn: () => get<SessionTranscript>(`${base}/transcript`, tq) });
  const replay = useQuery({ queryKey: ["session-replay", id, tenant], queryFn: () => get<SessionReplay>(`${base}/replay`, tq) });

  return (
    <Page title={`Session ${id}`} actions={<Link to="/sessions">All sessions</Link>}>
      <QueryView query={detail} action="read this session">
        {(s) => (
          <>
            <div className="tiles">
              <Tile testId="session-cost" label="Cost" value={<Money value={s.total_cost_usd} />} hint={`${count(s.request_count)} requests`} />
              <Tile label="Started" value={<Time value={s.started_at} />} hint={`lasted ${duration(Date.parse(s.ended_at) - Date.parse(s.started_at))}`} />
              <Tile label="Project" value={s.project} hint={s.tenant_id === null ? "operator" : `tenant ${s.tenant_id}`} />
              <Tile label="Providers" value={s.providers.join(", ") || "—"} hint={s.room_name ? `room ${s.room_name}` : "no room"} />
            </div>
            <div className="grid">
              <Card title="Cost per modality">
                <table data-testid="session-by-modality">
                  <tbody>
                    {Object.entries(s.by_modality).map(([m, v]) => (
                      <tr key={m}>
                        <th scope="row">{m}</th>
                        <td className="r num">{count(v.request_count)} requests</td>
                        <td className="r">
                          <Money value={v.cost} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </Card>
              {s.room_name ? <RoomLatency room={s.room_name} live={Date.now() - Date.parse(s.ended_at) < LIVE_MS} /> : null}
            </div>
          </>
        )}
      </QueryView>
      <Card title="Turns: caller speech end → agent speech start" wide>
        <QueryView query={turns} action="read turns" isEmpty={(t) => t.length === 0} empty="No turns recorded for this session.">
          {(t) => <TurnsTimeline turns={t} dead={dead.data ?? []} />}
        </QueryView>
      </Card>
      <div className="grid">
        <Card title="Dead air">
          <QueryView query={dead} action="read dead air" isEmpty={(d) => d.length === 0} empty="No dead air above the threshold.">
            {(d) => (
              <table data-testid="dead-air-table">
                <thead>
                  <tr>
                    <th scope="col">Started</th>
                    <th scope="col" className="r">
                      Duration
                    </th>
                    <th scope="col" className="r">
                      Threshold
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.map((e) => (
                    <tr key={e.started_at_ms}>
                      <td>
                        <Time value={e.started_at_ms} />
                      </td>
                      <td className="r num">{ms(e.duration_ms)}</td>
                      <td className="r num">{ms(e.threshold_used_ms)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </QueryView>
        </Card>
        <Card title="Transcript (who spoke when; no text is stored)">
          <QueryView query={transcript} action="read the transcript" isEmpty={(t) => t.entries.length === 0} empty="No speech recorded.">
            {(t) => (
              <ol className="transcript">
                {t.entries.map((e) => (
                  <li key={`${e.turn_index}-${e.speaker}`} className={e.speaker}>
                    <strong>{e.speaker}</strong> turn {e.turn_index} · <Time value={e.start_ms} /> · {e.end_ms === null ? "—" : duration(e.end_ms - e.start_ms)}
                  </li>
                ))}
              </ol>
            )}
          </QueryView>
        </Card>
      </div>
      <Card title="Replay" wide>
        <QueryView query={replay} action="read the replay" isEmpty={(r) => r.events.length === 0} empty="Nothing to replay.">
          {(r) => (
            <ol className="replay" data-testid="replay">
              {r.events.map((e, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: events have no id of their own and never reorder
                <li key={i}>
                  <Time value={e.at_ms} />{" "}
                  {e.kind === "request" ? (
                    <>
                      <Badge tone={statusTone(e.status)}>{e.modality}</Badge> {e.model_id} · TTFB {ms(e.ttfb_ms)} · <Money value={e.cost_usd} />
                    </>
                  ) : e.kind === "dead_air" ? (
                    <>
                      <Badge tone="warn">dead air</Badge> {ms(e.duration_ms)}
                    </>
                  ) : (
                    <>
                      <Badge tone={e.kind === "agent_speech" ? "ok" : "muted"}>{e.kind === "agent_speech" ? "agent" : "caller"}</Badge> turn {e.turn_index}
                    </>
                  )}
                </li>
              ))}
            </ol>
          )}
        </QueryView>
      </Card>
    </Page>
  );
}

function TurnsTimeline({ turns, dead }: { turns: SessionTurns; dead: SessionDeadAir }) {
  const start = Math.min(...turns.map((t) => t.caller_speak_start_ms), ...dead.map((d) => d.started_at_ms));
  const end = Math.max(...turns.map((t) => t.agent_speak_end_ms ?? t.agent_speak_start_ms ?? t.caller_speak_end_ms), ...dead.map((d) => d.started_at_ms + d.duration_ms));
  const span = Math.max(1, end - start);
  const pos = (t: number) => `${(((t - start) / span) * 100).toFixed(3)}%`;
  const width = (a: number, b: number) => `${Math.max(0.3, ((b - a) / span) * 100).toFixed(3)}%`;
  return (
    <>
      <div className="timeline" role="img" aria-label="Caller and agent speech over the session, dead air in amber">
        <div className="lane">
          <span className="lane-label">caller</span>
          {turns.map((t) => (
            <span key={t.turn_index} className="seg caller" style={{ left: pos(t.caller_speak_start_ms), width: width(t.caller_speak_start_ms, t.caller_speak_end_ms) }} />
          ))}
        </div>
        <div className="lane">
          <span className="lane-label">agent</span>
          {turns
            .filter((t) => t.agent_speak_start_ms !== null)
            .map((t) => (
              <span
                key={t.turn_index}
                className="seg agent"
                style={{ left: pos(t.agent_speak_start_ms ?? 0), width: width(t.agent_speak_start_ms ?? 0, t.agent_speak_end_ms ?? (t.agent_speak_start_ms ?? 0) + 500) }}
              />
            ))}
          {dead.map((d) => (
            <span key={d.started_at_ms} className="seg dead" style={{ left: pos(d.started_at_ms), width: width(d.started_at_ms, d.started_at_ms + d.duration_ms) }} />
          ))}
        </div>
      </div>
      <table data-testid="turns-table">
        <thead>
          <tr>
            <th scope="col">Turn</th>
            <th scope="col">Caller speech end</th>
            <th scope="col">Agent speech start</th>
            <th scope="col" className="r">
              Response speed
            </th>
          </tr>
        </thead>
        <tbody>
          {turns.map((t) => (
            <tr key={t.turn_index}>
              <td className="num">{t.turn_index}</td>
              <td>
                <Time value={t.caller_speak_end_ms} />
              </td>
              <td>{t.agent_speak_start_ms === null ? <span className="muted">never answered</span> : <Time value={t.agent_speak_start_ms} />}</td>
              <td className="r num strong">{ms(t.response_speed_ms)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/** Room latency; while the call is live, polls with since_turn and appends only the new turns. */
function RoomLatency({ room, live }: { room: string; live: boolean }) {
  const [seen, setSeen] = useState<RoomLatencyRecord["turns"]>([]);
  const since = seen.length > 0 ? (seen[seen.length - 1]?.seq ?? 0) : 0;
  const q = useQuery({
    queryKey: ["room-latency", room, since],
    queryFn: () => get<RoomLatencyRecord>(`/v1/rooms/${encodeURIComponent(room)}/latency`, { since_turn: since || undefined }),
    refetchInterval: live ? 5_000 : false,
  });
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
