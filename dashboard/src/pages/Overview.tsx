import { type QueryClient, useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { Link } from "react-router";
import { fleetQueries } from "../api/queries/fleet";
import { reportQueries } from "../api/queries/reports";
import { TimeChart } from "../ui/Chart";
import { Card, ErrorBox, Loading, Page, Select, Tile, useParam } from "../ui/components";
import { count, money, moneyShort, ms, pct } from "../ui/format";
import { MODALITIES, useProjectOptions } from "../ui/hooks";

const POLL = 30_000;
const countAxis = (v: number) => count(Math.round(v));

/** The overview's reads, shared by the page and the boot-time prefetch (same keys, one fetch each). */
export function overviewQueries(project: string) {
  return {
    overview: { ...reportQueries.overview(project), refetchInterval: POLL },
    today: { ...reportQueries.costs("today", project), refetchInterval: POLL },
    series: { ...reportQueries.costSeries("week", "hour", project), refetchInterval: POLL },
    latency: { ...reportQueries.latencyByModality("today", project), refetchInterval: POLL },
    agents: fleetQueries.roster(),
  };
}

/**
 * Started at boot, beside /api/whoami, when the tab opens on the overview with a key: the figures do
 * not wait for whoami's round trip. A 401 here changes nothing by itself (whoami decides).
 */
export function prefetchOverview(qc: QueryClient): void {
  const project = new URLSearchParams(window.location.search).get("project") ?? "";
  for (const o of Object.values(overviewQueries(project))) void qc.prefetchQuery(o as Parameters<QueryClient["prefetchQuery"]>[0]);
}

export function OverviewPage() {
  const [project, setProject] = useParam("project");
  const projects = useProjectOptions();
  const q = overviewQueries(project);
  const overview = useQuery(q.overview);
  const today = useQuery(q.today);
  // A week of hours: the last 24 are the chart and today's error rate, the 24 before them are yesterday.
  const series = useQuery(q.series);
  const latency = useQuery(q.latency);
  const agents = useQuery(q.agents);

  const day = useMemo(() => {
    const pts = series.data?.points ?? [];
    const last = pts.slice(-24);
    const before = pts.slice(-48, -24);
    const sum = (xs: typeof pts, f: (p: (typeof pts)[number]) => number) => xs.reduce((a, p) => a + f(p), 0);
    const requests = sum(last, (p) => p.requests);
    return {
      yesterday: sum(before, (p) => p.cost),
      errorRate: requests > 0 ? (sum(last, (p) => p.errors) / requests) * 100 : null,
      chart: {
        x: last.map((p) => Date.parse(p.t) / 1000),
        series: [
          { label: "Cost", values: last.map((p) => p.cost), color: "--accent" },
          { label: "Requests", values: last.map((p) => p.requests), color: "--accent-2", bars: true, right: true },
        ],
      },
    };
  }, [series.data]);

  const requestsToday = today.data ? Object.values(today.data.by_provider).reduce((a, l) => a + l.requests, 0) : null;
  const costToday = overview.data?.total_cost_today ?? null;
  const delta = costToday !== null && series.data ? costToday - day.yesterday : null;

  return (
    <Page title="Overview" actions={<Select label="Project" value={project} onChange={setProject} options={projects} />}>
      {overview.isError ? <ErrorBox error={overview.error} action="read the overview" /> : null}
      <div className="tiles" data-testid="overview-tiles">
        <Tile
          testId="tile-cost-today"
          label="Cost, last 24 h"
          value={overview.isPending ? "…" : money(costToday)}
          hint={delta === null ? "vs previous 24 h" : `${delta >= 0 ? "+" : "−"}${moneyShort(Math.abs(delta))} vs previous 24 h (${moneyShort(day.yesterday)})`}
        />
        <Tile testId="tile-requests" label="Requests, last 24 h" value={today.isPending ? "…" : count(requestsToday)} hint={`${count(overview.data?.total_requests)} all time`} />
        <Tile testId="tile-error-rate" label="Error rate, last 24 h" value={series.isPending ? "…" : pct(day.errorRate)} hint="status error / requests" />
        <Tile testId="tile-cost-all" label="Cost, all time" value={overview.isPending ? "…" : money(overview.data?.total_cost_all)} hint={`${count(overview.data?.active_models)} models active today`} />
        <Tile
          testId="tile-providers"
          label="Providers configured"
          value={overview.isPending ? "…" : count(overview.data?.providers_configured)}
          hint={<Link to="/providers">Providers</Link>}
        />
        <Tile
          testId="tile-agents"
          label="Agents online"
          value={agents.isPending ? "…" : agents.isError ? "—" : count(agents.data.count)}
          hint={<Link to="/fleet">Fleet</Link>}
        />
      </div>
      <div className="tiles">
        {MODALITIES.map((m) => {
          const l = latency.data?.modalities[m];
          return (
            <Tile
              key={m}
              testId={`tile-p95-${m}`}
              label={`p95 TTFB, ${m.toUpperCase()}`}
              value={latency.isPending ? "…" : ms(l?.p95_ttfb_ms)}
              hint={l ? `p50 ${ms(l.p50_ttfb_ms)} · ${count(l.requests)} requests` : "no samples in 24 h"}
            />
          );
        })}
      </div>
      <Card title="Cost and requests, last 24 hours" wide>
        {series.isPending ? <Loading /> : series.isError ? <ErrorBox error={series.error} action="read the cost series" /> : (
          <TimeChart label="Cost and requests per hour over the last 24 hours" x={day.chart.x} series={day.chart.series} format={money} formatRight={countAxis} />
        )}
      </Card>
    </Page>
  );
}
