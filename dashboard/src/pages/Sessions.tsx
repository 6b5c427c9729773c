import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { Link, useParams } from "react-router";
import { sessionQueries } from "../api/queries/sessions";
import type { SessionRow } from "../api/types";
import { Badge, Card, Empty, ErrorBox, Loading, Money, Page, QueryView, Select, statusTone, Time, Tile, useParam } from "../ui/components";
import { count, duration, ms } from "../ui/format";
import { useProjectOptions } from "../ui/hooks";
import { type Column, dash, Table } from "../ui/Table";
import { RoomLatency } from "./RoomLatency";
import { TurnsTimeline } from "./SessionTimeline";

const SESSION_COLUMNS: Column<SessionRow>[] = [
  {
    header: "Session",
    cell: (s) => <Link to={`/sessions/${encodeURIComponent(s.id)}${s.tenant_id === null ? "" : `?tenant=${encodeURIComponent(s.tenant_id)}`}`}>{s.id}</Link>,
  },
  { header: "Started", cell: (s) => <Time value={s.started_at} /> },
  { header: "Duration", className: "num", cell: (s) => duration(Date.parse(s.ended_at) - Date.parse(s.started_at)) },
  { header: "Project", cell: (s) => s.project },
  { header: "Room", cell: (s) => s.room_name ?? dash },
  {
    header: "Modalities",
    cell: (s) =>
      s.modalities.map((m) => (
        <Badge key={m} tone="info">
          {m}
        </Badge>
      )),
  },
  { header: "Requests", align: "r", className: "num", cell: (s) => count(s.request_count) },
  { header: "Cost", align: "r", cell: (s) => <Money value={s.total_cost_usd} /> },
];

export function SessionsPage() {
  const [project, setProject] = useParam("project");
  const [room, setRoom] = useParam("room");
  const projects = useProjectOptions();
  const pages = useInfiniteQuery(sessionQueries.list(project, room));
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
            <Table testId="sessions-table" rows={rows} rowKey={(s) => `${s.tenant_id ?? ""}/${s.id}`} columns={SESSION_COLUMNS} />
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
  const detail = useQuery(sessionQueries.detail(id, tenant));
  const turns = useQuery(sessionQueries.turns(id, tenant));
  const dead = useQuery(sessionQueries.deadAir(id, tenant));
  const transcript = useQuery(sessionQueries.transcript(id, tenant));
  const replay = useQuery(sessionQueries.replay(id, tenant));

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
              <Table
                testId="dead-air-table"
                rows={d}
                rowKey={(e) => e.started_at_ms}
                columns={[
                  { header: "Started", cell: (e) => <Time value={e.started_at_ms} /> },
                  { header: "Duration", align: "r", className: "num", cell: (e) => ms(e.duration_ms) },
                  { header: "Threshold", align: "r", className: "num", cell: (e) => ms(e.threshold_used_ms) },
                ]}
              />
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
