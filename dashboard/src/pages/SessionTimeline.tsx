import type { SessionDeadAir, SessionTurns } from "../api/types";
import { Time } from "../ui/components";
import { ms } from "../ui/format";
import { Table } from "../ui/Table";

/** Caller and agent speech over the session as two lanes (dead air in amber), then the turns as a table. */
export function TurnsTimeline({ turns, dead }: { turns: SessionTurns; dead: SessionDeadAir }) {
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
      <Table
        testId="turns-table"
        rows={turns}
        rowKey={(t) => t.turn_index}
        columns={[
          { header: "Turn", className: "num", cell: (t) => t.turn_index },
          { header: "Caller speech end", cell: (t) => <Time value={t.caller_speak_end_ms} /> },
          {
            header: "Agent speech start",
            cell: (t) => (t.agent_speak_start_ms === null ? <span className="muted">never answered</span> : <Time value={t.agent_speak_start_ms} />),
          },
          { header: "Response speed", align: "r", className: "num strong", cell: (t) => ms(t.response_speed_ms) },
        ]}
      />
    </>
  );
}

