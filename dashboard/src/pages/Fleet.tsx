import { useQuery } from "@tanstack/react-query";
import { fleetQueries } from "../api/queries/fleet";
import type { FleetIndex, RosterResponse } from "../api/types";
import { Badge, Card, Money, Page, QueryView, Segmented, Select, statusTone, Tile, Time, useParam } from "../ui/components";
import { bytes, count, ms, num, pct } from "../ui/format";
import { COST_PERIODS, PERIOD_HINT } from "../ui/hooks";
import { type Column, Table } from "../ui/Table";

/** Heartbeats older than this (of the 45 s roster ageing) are shown as stale. */
const STALE_SECONDS = 30;
/** One page of the fleet index (the API's default). */
const PAGE = 100;
const SORTS = [
  { value: "cost", label: "Cost" },
  { value: "requests", label: "Requests" },
  { value: "agent_id", label: "Agent id" },
];

type IndexAgent = FleetIndex["agents"][number];

function Presence({ a }: { a: IndexAgent }) {
  if (a.online) return <Badge tone="ok">online</Badge>;
  return <Badge tone={a.last_heartbeat_at ? "warn" : "muted"}>{a.last_heartbeat_at ? "offline" : "no heartbeat"}</Badge>;
}

/** Probe traffic counted apart (kept out of every percentile and of the error rate). */
function Probe({ p }: { p: IndexAgent["probe"] }) {
  if (p.requests + p.turns + p.calls === 0) return <span className="muted">—</span>;
  return (
    <span className="small" data-testid="probe">
      requests {count(p.requests)} · turns {count(p.turns)} · calls {count(p.calls)}
    </span>
  );
}

const INDEX_COLUMNS: Column<IndexAgent>[] = [
  {
    header: "Agent",
    cell: (a) => (
      <>
        <strong>{a.agent_name ?? a.agent_id}</strong>
        <div className="muted small">
          {a.agent_id}
          {a.tenant_id ? ` · ${a.tenant_id}` : null}
          {a.version ? ` · ${a.version}` : null}
          {a.host ? ` · ${a.host}` : null}
        </div>
      </>
    ),
  },
  {
    header: "Presence",
    cell: (a) => (
      <>
        <Presence a={a} />
        {a.last_heartbeat_at ? (
          <div className="muted small">
            <Time value={a.last_heartbeat_at} />
          </div>
        ) : null}
      </>
    ),
  },
  { header: "Sessions", align: "r", className: "num", cell: (a) => count(a.sessions) },
  { header: "Calls", align: "r", className: "num", cell: (a) => count(a.calls) },
  {
    header: "Requests",
    align: "r",
    className: "num",
    cell: (a) => (
      <>
        {count(a.requests)}
        {a.errors > 0 ? <div className="muted small">{a.errors === 1 ? "1 error" : `${count(a.errors)} errors`}</div> : null}
      </>
    ),
  },
  { header: "Error rate", align: "r", className: "num", cell: (a) => (a.error_rate === null ? "—" : pct(a.error_rate * 100)) },
  { header: "Cost", align: "r", cell: (a) => <Money value={a.cost_usd} /> },
  { header: "Rated price", align: "r", cell: (a) => <Money value={a.rated_price_usd} /> },
  {
    header: "p95 response",
    align: "r",
    className: "num",
    cell: (a) => (
      <>
        {ms(a.p95_response_speed_ms)}
        {a.turns > 0 ? <div className="muted small">{a.turns === 1 ? "1 turn" : `${count(a.turns)} turns`}</div> : null}
      </>
    ),
  },
  {
    header: "p95 TTFB stt / llm / tts",
    align: "r",
    className: "num",
    cell: (a) => `${ms(a.p95_ttfb_ms.stt)} / ${ms(a.p95_ttfb_ms.llm)} / ${ms(a.p95_ttfb_ms.tts)}`,
  },
  { header: "Probe traffic (excluded)", cell: (a) => <Probe p={a.probe} /> },
];

type RosterAgent = RosterResponse["agents"][number];

const ROSTER_COLUMNS: Column<RosterAgent>[] = [
  {
    header: "Agent",
    cell: (a) => (
      <>
        <strong>{a.agent_name ?? a.agent_id}</strong>
        <div className="muted small">{a.agent_id}</div>
      </>
    ),
  },
  {
    header: "Presence",
    cell: (a) => {
      const stale = a.seconds_since_heartbeat > STALE_SECONDS;
      return <Badge tone={stale ? "warn" : "ok"}>{stale ? "stale" : "online"}</Badge>;
    },
  },
  { header: "Status", cell: (a) => <Badge tone={statusTone(a.status ?? "")}>{a.status ?? "—"}</Badge> },
  { header: "Sessions", align: "r", className: "num", cell: (a) => count(a.active_sessions) },
  { header: "Version", cell: (a) => a.version ?? "—" },
  {
    header: "Host / region",
    cell: (a) => (
      <>
        {a.host ?? "—"}
        {a.region ? <span className="muted"> · {a.region}</span> : null}
      </>
    ),
  },
  { header: "Project", cell: (a) => a.project ?? "—" },
  { header: "CPU", align: "r", className: "num", cell: (a) => (a.cpu_pct === null ? "—" : `${num(a.cpu_pct)}%`) },
  {
    header: "Memory",
    align: "r",
    className: "num",
    cell: (a) => (
      <>
        {bytes(a.memory_rss_bytes)}
        {a.memory_total_bytes ? <span className="muted"> / {bytes(a.memory_total_bytes)}</span> : null}
      </>
    ),
  },
  {
    header: "Last heartbeat",
    cell: (a) => (
      <>
        <Time value={a.last_seen_at} /> <span className="muted small">({num(a.seconds_since_heartbeat)} s ago)</span>
      </>
    ),
  },
];

export function FleetPage() {
  // A new period or sort starts at the first page.
  const [period, changePeriod] = useParam("period", "today", ["offset"]);
  const [sort, changeSort] = useParam("sort", "cost", ["offset"]);
  const [offsetParam, setOffset] = useParam("offset", "0");
  const offset = Math.max(0, Number.parseInt(offsetParam, 10) || 0);
  const roster = useQuery(fleetQueries.roster());
  const index = useQuery({ ...fleetQueries.index(period, sort, offset, PAGE), refetchInterval: 30_000 });
  return (
    <Page
      title="Fleet"
      actions={
        <>
          <Segmented label="Period" value={period} onChange={changePeriod} options={COST_PERIODS} />
          <Select label="Sort" value={sort} onChange={changeSort} options={SORTS} />
        </>
      }
    >
      <QueryView query={roster} action="read the agent roster">
        {(r) => {
          const busy = r.agents.filter((a) => a.status === "busy").length;
          const sessions = r.agents.reduce((a, x) => a + (x.active_sessions ?? 0), 0);
          return (
            <div className="tiles">
              <Tile testId="fleet-online" label="Agents online" value={count(r.count)} hint={`aged out ${r.ageing_seconds} s after the last heartbeat`} />
              <Tile label="Busy" value={count(busy)} hint={`${count(r.count - busy)} idle`} />
              <Tile label="Active sessions" value={count(sessions)} />
              <Tile
                testId="fleet-seen"
                label={`Agents seen, ${PERIOD_HINT[period] ?? period}`}
                value={index.data ? count(index.data.total_agents) : "—"}
                hint="with traffic in the period or a heartbeat"
              />
            </div>
          );
        }}
      </QueryView>
      <Card title={`Fleet index, ${PERIOD_HINT[period] ?? period}`} wide>
        <p className="muted small">
          Cost and requests include probe (load-test) traffic; it is counted apart per agent and kept out of every p95 and of the error rate.
        </p>
        <QueryView
          query={index}
          action="read the fleet index"
          isEmpty={(r) => r.total_agents === 0}
          empty="No agent has sent traffic in this period or a heartbeat yet."
        >
          {(r) => (
            <>
              <Table testId="fleet-index" rows={r.agents} rowKey={(a) => `${a.tenant_id ?? ""}/${a.agent_id}`} columns={INDEX_COLUMNS} rowTestId="fleet-index-row" />
              {r.total_agents > r.limit ? (
                <div className="buttons">
                  <span className="muted small">
                    {count(r.agents.length === 0 ? 0 : r.offset + 1)}–{count(r.offset + r.agents.length)} of {count(r.total_agents)} agents
                  </span>
                  <button type="button" className="secondary" disabled={r.offset === 0} onClick={() => setOffset(String(Math.max(0, r.offset - r.limit)))}>
                    Previous
                  </button>
                  <button type="button" className="secondary" disabled={r.offset + r.limit >= r.total_agents} onClick={() => setOffset(String(r.offset + r.limit))}>
                    Next
                  </button>
                </div>
              ) : null}
            </>
          )}
        </QueryView>
      </Card>
      <Card title="Live roster" wide>
        <QueryView query={roster} action="read the agent roster">
          {(r) =>
            r.agents.length === 0 ? (
              <p className="state empty">No agent has sent a heartbeat in the last {r.ageing_seconds} seconds.</p>
            ) : (
              <Table testId="fleet-table" rows={r.agents} rowKey={(a) => `${a.tenant_id ?? ""}/${a.agent_id}`} columns={ROSTER_COLUMNS} />
            )
          }
        </QueryView>
      </Card>
    </Page>
  );
}
