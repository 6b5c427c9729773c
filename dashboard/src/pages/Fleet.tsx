import { useQuery } from "@tanstack/react-query";
import { get } from "../api/client";
import type { RosterResponse } from "../api/types";
import { Badge, Card, Page, QueryView, statusTone, Tile, Time } from "../ui/components";
import { bytes, count, num } from "../ui/format";

/** Heartbeats older than this (of the 45 s roster ageing) are shown as stale. */
const STALE_SECONDS = 30;

export function FleetPage() {
  const roster = useQuery({ queryKey: ["agents"], queryFn: () => get<RosterResponse>("/v1/agents"), refetchInterval: 15_000 });
  // TODO(fleet index): GET /api/agents (fleetIndex in src/fleet/index-queries.ts, branch `agents`) is
  // not on this branch yet. Once merged: export its type through api/types.ts
  // (Awaited<ReturnType<typeof fleetIndex>>), query it here and join cost, p95 and probe traffic per
  // agent_id into this table.
  return (
    <Page title="Fleet">
      <QueryView query={roster} action="read the agent roster">
        {(r) => {
          const busy = r.agents.filter((a) => a.status === "busy").length;
          const sessions = r.agents.reduce((a, x) => a + (x.active_sessions ?? 0), 0);
          return (
            <>
              <div className="tiles">
                <Tile testId="fleet-online" label="Agents online" value={count(r.count)} hint={`aged out ${r.ageing_seconds} s after the last heartbeat`} />
                <Tile label="Busy" value={count(busy)} hint={`${count(r.count - busy)} idle`} />
                <Tile label="Active sessions" value={count(sessions)} />
              </div>
              <Card wide>
                {r.agents.length === 0 ? (
                  <p className="state empty">No agent has sent a heartbeat in the last {r.ageing_seconds} seconds.</p>
                ) : (
                  <table data-testid="fleet-table">
                    <thead>
                      <tr>
                        <th scope="col">Agent</th>
                        <th scope="col">Presence</th>
                        <th scope="col">Status</th>
                        <th scope="col" className="r">
                          Sessions
                        </th>
                        <th scope="col">Version</th>
                        <th scope="col">Host / region</th>
                        <th scope="col">Project</th>
                        <th scope="col" className="r">
                          CPU
                        </th>
                        <th scope="col" className="r">
                          Memory
                        </th>
                        <th scope="col">Last heartbeat</th>
                      </tr>
                    </thead>
                    <tbody>
                      {r.agents.map((a) => {
                        const stale = a.seconds_since_heartbeat > STALE_SECONDS;
                        return (
                          <tr key={`${a.tenant_id ?? ""}/${a.agent_id}`}>
                            <td>
                              <strong>{a.agent_name ?? a.agent_id}</strong>
                              <div className="muted small">{a.agent_id}</div>
                            </td>
                            <td>
                              <Badge tone={stale ? "warn" : "ok"}>{stale ? "stale" : "online"}</Badge>
                            </td>
                            <td>
                              <Badge tone={statusTone(a.status ?? "")}>{a.status ?? "—"}</Badge>
                            </td>
                            <td className="r num">{count(a.active_sessions)}</td>
                            <td>{a.version ?? "—"}</td>
                            <td>
                              {a.host ?? "—"}
                              {a.region ? <span className="muted"> · {a.region}</span> : null}
                            </td>
                            <td>{a.project ?? "—"}</td>
                            <td className="r num">{a.cpu_pct === null ? "—" : `${num(a.cpu_pct)}%`}</td>
                            <td className="r num">
                              {bytes(a.memory_rss_bytes)}
                              {a.memory_total_bytes ? <span className="muted"> / {bytes(a.memory_total_bytes)}</span> : null}
                            </td>
                            <td>
                              <Time value={a.last_seen_at} /> <span className="muted small">({num(a.seconds_since_heartbeat)} s ago)</span>
                            </td>
                          </tr>
                        );
                      })}
                    </tbody>
                  </table>
                )}
              </Card>
            </>
          );
        }}
      </QueryView>
    </Page>
  );
}
