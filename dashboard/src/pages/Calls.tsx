import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link, useParams, useSearchParams } from "react-router";
import { callQueries } from "../api/queries/calls";
import type { CallLeg, CallRow } from "../api/types";
import { Badge, Card, Page, QueryView, Select, Tile, Time, useParam } from "../ui/components";
import { duration } from "../ui/format";
import { type Column, dash, Table } from "../ui/Table";

const callDuration = (c: CallRow) => (c.started_at_ms !== null && c.ended_at_ms !== null ? duration(c.ended_at_ms - c.started_at_ms) : c.ended_at_ms === null ? "live" : "—");

const PAGE_SIZES = ["50", "100", "200", "500"];

const CALL_COLUMNS: Column<CallRow>[] = [
  {
    header: "Room",
    cell: (c) => (
      <>
        <Link to={`/calls/${encodeURIComponent(c.room_sid)}`}>{c.room_name ?? c.room_sid}</Link> {c.is_probe ? <Badge tone="muted">probe</Badge> : null}
      </>
    ),
  },
  { header: "Started", cell: (c) => <Time value={c.started_at_ms} /> },
  { header: "Duration", className: "num", cell: callDuration },
  { header: "Channel", cell: (c) => c.channel ?? "—" },
  {
    header: "SIP status",
    cell: (c) =>
      c.end_reason ? (
        <Badge tone={c.end_reason.includes("FAILURE") ? "bad" : "warn"}>{c.end_reason}</Badge>
      ) : c.channel === "sip" ? (
        <Badge tone="ok">ok</Badge>
      ) : (
        "—"
      ),
  },
  { header: "Disconnect reasons", cell: (c) => c.disconnect_reasons.join(", ") || dash },
  { header: "Legs", align: "r", className: "num", cell: (c) => c.leg_count },
  { header: "Agent", cell: (c) => c.agent_id ?? dash },
];

const LEG_COLUMNS: Column<CallLeg>[] = [
  { header: "Participant", cell: (l) => l.identity ?? l.participant_sid },
  { header: "Kind", cell: (l) => <Badge tone="info">{l.kind ?? "?"}</Badge> },
  { header: "Joined", cell: (l) => <Time value={l.joined_at_ms} /> },
  { header: "Left", cell: (l) => <Time value={l.left_at_ms} /> },
  { header: "First audio", cell: (l) => (l.first_audio_track_at_ms !== null && l.joined_at_ms !== null ? `+${l.first_audio_track_at_ms - l.joined_at_ms} ms` : "—") },
  { header: "Codec", cell: (l) => l.audio_codec ?? "—" },
  { header: "Disconnect reason", cell: (l) => (l.disconnect_reason ? <Badge tone="warn">{l.disconnect_reason}</Badge> : dash) },
];

/**
 * Calls newest first, a page at a time: GET /api/calls takes `limit` and a `before` cursor (epoch ms,
 * the oldest start seen), both held in the URL so a page of older calls is a link. The API has no
 * filters (channel, agent, probe): the page offers none rather than filtering one page client-side.
 */
export function CallsPage() {
  const [limit, setLimit] = useParam("limit", "200");
  const [params, setParams] = useSearchParams();
  const before = params.get("before") ?? "";
  // Paging pushes a history entry (Back returns to the newer page); the page size replaces.
  const goTo = (cursor: string) =>
    setParams((prev) => {
      const next = new URLSearchParams(prev);
      if (cursor) next.set("before", cursor);
      else next.delete("before");
      return next;
    });
  const calls = useQuery({
    ...callQueries.list(limit, before),
    // Only the newest page changes as calls arrive; an older page is a fixed window.
    refetchInterval: before ? false : 15_000,
    placeholderData: keepPreviousData,
  });
  const rows = calls.data ?? [];
  const oldest = rows.at(-1)?.started_at_ms ?? null;
  // A full page whose oldest call has a start time may have older calls behind it.
  const hasOlder = rows.length >= Number(limit) && oldest !== null && oldest > 0;
  const sizes = PAGE_SIZES.includes(limit) ? PAGE_SIZES : [limit, ...PAGE_SIZES];
  return (
    <Page title="Calls" actions={<Select label="Rows" value={limit} onChange={setLimit} options={sizes} />}>
      <Card wide>
        <div className="toolbar" data-testid="calls-pager">
          {before ? (
            <>
              <span className="muted small">
                Calls started before <Time value={Number(before)} />
              </span>
              <button type="button" className="secondary small" onClick={() => goTo("")}>
                Newest calls
              </button>
            </>
          ) : (
            <span className="muted small">Newest calls first{calls.isSuccess ? ` · ${rows.length} shown` : ""}</span>
          )}
        </div>
        <QueryView query={calls} action="read calls" isEmpty={(c) => c.length === 0} empty={before ? "No older calls." : "No calls recorded (LiveKit webhook or call observations)."}>
          {(rows) => (
            <Table testId="calls-table" rows={rows} rowKey={(c) => c.room_sid} columns={CALL_COLUMNS} />
          )}
        </QueryView>
        {hasOlder ? (
          <button type="button" className="secondary" onClick={() => goTo(String(oldest))} disabled={calls.isFetching}>
            {calls.isFetching ? "Loading…" : "Older calls"}
          </button>
        ) : null}
      </Card>
    </Page>
  );
}

export function CallDetailPage() {
  const ref = useParams().ref ?? "";
  const call = useQuery(callQueries.detail(ref));
  return (
    <Page title={`Call ${ref}`} actions={<Link to="/calls">All calls</Link>}>
      <QueryView query={call} action="read this call">
        {(c) => (
          <>
            <div className="tiles">
              <Tile label="Room" value={c.room_name ?? c.room_sid} hint={c.room_sid} />
              <Tile label="Started" value={<Time value={c.started_at_ms} />} hint={`duration ${callDuration(c)}`} />
              <Tile label="Channel" value={c.channel ?? "—"} hint={c.trunk_id ? `trunk ${c.trunk_id}` : undefined} />
              <Tile label="End reason" value={c.end_reason ?? "—"} hint={c.origin ? `first seen from ${c.origin}` : undefined} />
            </div>
            <Card title="Legs" wide>
              <Table testId="legs-table" rows={c.legs} rowKey={(l) => l.participant_sid} columns={LEG_COLUMNS} />
              {c.room_name ? (
                <p className="small">
                  <Link to={`/sessions?room=${encodeURIComponent(c.room_name)}`}>Sessions in this room</Link>
                </p>
              ) : null}
            </Card>
          </>
        )}
      </QueryView>
    </Page>
  );
}
