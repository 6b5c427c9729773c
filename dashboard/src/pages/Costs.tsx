import { useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { reportQueries } from "../api/queries/reports";
import type { DashboardCostReport } from "../api/types";
import { TimeChart } from "../ui/Chart";
import { Card, Money, Page, QueryView, Tile } from "../ui/components";
import { count, money } from "../ui/format";
import { Table } from "../ui/Table";
import { useReportFilters } from "../ui/filters";
import { COST_PERIODS, PERIOD_HINT } from "../ui/hooks";

type Lines = DashboardCostReport["by_provider"];
const countAxis = (v: number) => count(Math.round(v));

function Breakdown({ title, lines, total, testId }: { title: string; lines: Lines; total: number; testId: string }) {
  const rows = Object.entries(lines).sort(([, a], [, b]) => b.cost - a.cost);
  return (
    <Card title={title}>
      {rows.length === 0 ? (
        <p className="muted">No spend in this period.</p>
      ) : (
        <Table
          testId={testId}
          rows={rows}
          rowKey={([k]) => k}
          columns={[
            { header: title.replace("By ", ""), cell: ([k]) => k },
            { header: "Requests", align: "r", className: "num", cell: ([, l]) => count(l.requests) },
            { header: "Cost", align: "r", cell: ([, l]) => <Money value={l.cost} /> },
            {
              header: "Share",
              align: "r",
              className: "num",
              cell: ([, l]) => (
                <>
                  <span className="bar" aria-hidden="true">
                    <span className={`bar-fill w${Math.round((total > 0 ? l.cost / total : 0) * 20) * 5}`} />
                  </span>
                  {total > 0 ? `${((l.cost / total) * 100).toFixed(1)}%` : "—"}
                </>
              ),
            },
          ]}
        />
      )}
    </Card>
  );
}

export function CostsPage() {
  const { period, project, controls } = useReportFilters(COST_PERIODS);
  const report = useQuery(reportQueries.costs(period, project));
  const series = useQuery(reportQueries.costSeries(period, "", project));
  const chart = useMemo(() => {
    const pts = series.data?.points ?? [];
    return {
      x: pts.map((p) => Date.parse(p.t) / 1000),
      series: [
        { label: "Cost", values: pts.map((p) => p.cost), color: "--accent" },
        { label: "Requests", values: pts.map((p) => p.requests), color: "--accent-2", bars: true, right: true },
      ],
    };
  }, [series.data]);

  return (
    <Page title="Costs" actions={controls}>
      <QueryView query={report} action="read costs">
        {(r) => {
          const requests = Object.values(r.by_provider).reduce((a, l) => a + l.requests, 0);
          return (
            <>
              <div className="tiles">
                <Tile testId="costs-total" label={`Total, ${PERIOD_HINT[r.period] ?? r.period}`} value={money(r.total)} hint="what providers charged (cost_usd)" />
                <Tile label="Requests" value={count(requests)} />
                <Tile label="Average per request" value={money(requests > 0 ? r.total / requests : null)} />
              </div>
              <Card title={`Cost over time (per ${series.data?.bucket ?? "bucket"})`} wide>
                <QueryView query={series} action="read the cost series" isEmpty={(s) => s.points.length === 0} empty="No spend in this period.">
                  {() => <TimeChart label="Cost over time" x={chart.x} series={chart.series} format={money} formatRight={countAxis} />}
                </QueryView>
              </Card>
              <div className="grid">
                <Breakdown title="By provider" lines={r.by_provider} total={r.total} testId="costs-by-provider" />
                <Breakdown title="By model" lines={r.by_model} total={r.total} testId="costs-by-model" />
                {r.by_project ? <Breakdown title="By project" lines={r.by_project} total={r.total} testId="costs-by-project" /> : null}
              </div>
            </>
          );
        }}
      </QueryView>
    </Page>
  );
}
