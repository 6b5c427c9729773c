import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link, useParams, useSearchParams } from "react-router";
import { get } from "../api/client";
import type { CallDetail, CallRow } from "../api/types";
import { Badge, Card, Page, QueryView, Select, Tile, Time, useParam } from "../ui/components";
import { duration } from "../ui/format";

const callDuration = (c: CallRow) => (c.started_at_ms !== null && c.ended_at_ms !== null ? duration(c.ended_at_ms - c.started_at_ms) : c.ended_at_ms === null ? "live" : "—");

const PAGE_SIZES = ["50", "100", "200", "500"];

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
    queryKey: ["calls", limit, before],
    queryFn: () => get<CallRow[]>("/api/calls", { limit, before }),
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
            <table data-testid="calls-table">
              <thead>
                <tr>
                  <th scope="col">Room</th>
                  <th scope="col">Started</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Channel</th>
                  <th scope="col">SIP status</th>
                  <th scope="col">Disconnect reasons</th>
                  <th scope="col" className="r">
                    Legs
                  </th>
                  <th scope="col">Agent</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((c) => (
                  <tr key={c.room_sid}>
                    <td>
                      <Link to={`/calls/${encodeURIComponent(c.room_sid)}`}>{c.room_name ?? c.room_sid}</Link> {c.is_probe ? <Badge tone="muted">probe</Badge> : null}
                    </td>
                    <td>
                      <Time value={c.started_at_ms} />
                    </td>
                    <td className="num">{callDuration(c)}</td>
                    <td>{c.channel ?? "—"}</td>
                    <td>{c.end_reason ? <Badge tone={c.end_reason.includes("FAILURE") ? "bad" : "warn"}>{c.end_reason}</Badge> : c.channel === "sip" ? <Badge tone="ok">ok</Badge> : "—"}</td>
                    <td>{c.disconnect_reasons.join(", ") || <span className="muted">—</span>}</td>
                    <td className="r num">{c.leg_count}</td>
                    <td>{c.agent_id ?? <span className="muted">—</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
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
  const call = useQuery({ queryKey: ["call", ref], queryFn: () => get<CallDetail>(`/api/calls/${encodeURIComponent(ref)}`) });
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
              <table data-testid="legs-table">
                <thead>
                  <tr>
                    <th scope="col">Participant</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Joined</th>
                    <th scope="col">Left</th>
                    <th scope="col">First audio</th>
                    <th scope="col">Codec</th>
                    <th scope="col">Disconnect reason</th>
                  </tr>
                </thead>
                <tbody>
                  {c.legs.map((l) => (
                    <tr key={l.participant_sid}>
                      <td>{l.identity ?? l.participant_sid}</td>
                      <td>
                        <Badge tone="info">{l.kind ?? "?"}</Badge>
                      </td>
                      <td>
                        <Time value={l.joined_at_ms} />
                      </td>
                      <td>
                        <Time value={l.left_at_ms} />
                      </td>
                      <td>{l.first_audio_track_at_ms !== null && l.joined_at_ms !== null ? `+${l.first_audio_track_at_ms - l.joined_at_ms} ms` : "—"}</td>
                      <td>{l.audio_codec ?? "—"}</td>
                      <td>{l.disconnect_reason ? <Badge tone="warn">{l.disconnect_reason}</Badge> : <span className="muted">—</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
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
