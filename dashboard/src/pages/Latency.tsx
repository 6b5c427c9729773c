import { useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { reportQueries } from "../api/queries/reports";
import type { ModelLatency } from "../api/types";
import { TimeChart } from "../ui/Chart";
import { Badge, Card, Page, QueryView, Select, useParam } from "../ui/components";
import { count, ms } from "../ui/format";
import { useReportFilters } from "../ui/filters";
import { LATENCY_PERIODS, MODALITIES } from "../ui/hooks";
import { type Column, Table } from "../ui/Table";

const msAxis = (v: number) => `${Math.round(v)} ms`;

const msColumn = (header: string, f: (m: ModelLatency) => number | null | undefined, strong = false): Column<[string, ModelLatency]> => ({
  header,
  align: "r",
  className: strong ? "num strong" : "num",
  cell: ([, m]) => ms(f(m)),
});

const COLUMNS: Column<[string, ModelLatency]>[] = [
  { header: "Model", cell: ([id]) => id },
  { header: "Modality", cell: ([, m]) => <Badge tone="info">{m.modality}</Badge> },
  { header: "Requests", align: "r", className: "num", cell: ([, m]) => count(m.requests) },
  msColumn("Avg TTFB", (m) => m.avg_ttfb_ms),
  msColumn("p50 TTFB", (m) => m.p50_ttfb_ms),
  msColumn("p95 TTFB", (m) => m.p95_ttfb_ms, true),
  msColumn("Avg total", (m) => m.avg_total_latency_ms),
  msColumn("p50 total", (m) => m.p50_total_latency_ms),
  msColumn("p95 total", (m) => m.p95_total_latency_ms, true),
];

export function LatencyPage() {
  const [modality, setModality] = useParam("modality");
  const { period, project, controls } = useReportFilters(
    LATENCY_PERIODS,
    <Select label="Modality" value={modality} onChange={setModality} options={[{ value: "", label: "All modalities" }, ...MODALITIES]} />,
  );
  const report = useQuery(reportQueries.latency(period, project));
  const series = useQuery(reportQueries.latencySeries(period, project, modality));
  const chart = useMemo(() => {
    const pts = series.data?.points ?? [];
    return {
      x: pts.map((p) => Date.parse(p.t) / 1000),
      series: [
        { label: "p50 TTFB", values: pts.map((p) => p.p50_ttfb_ms), color: "--accent-2" },
        { label: "p95 TTFB", values: pts.map((p) => p.p95_ttfb_ms), color: "--accent" },
        { label: "p95 total", values: pts.map((p) => p.p95_total_latency_ms), color: "--warn" },
      ],
    };
  }, [series.data]);

  return (
    <Page title="Latency" actions={controls}>
      <Card title="Percentiles over time (probe traffic excluded)" wide>
        <QueryView query={series} action="read latency" isEmpty={(s) => s.points.every((p) => p.requests === 0)} empty="No requests in this period.">
          {() => <TimeChart label="Latency percentiles over time" x={chart.x} series={chart.series} format={msAxis} />}
        </QueryView>
      </Card>
      <Card title="Per model" wide>
        <QueryView
          query={report}
          action="read latency"
          isEmpty={(r) => Object.values(r.models).filter((m) => !modality || m.modality === modality).length === 0}
          empty="No latency samples for this filter."
        >
          {(r) => (
            <Table
              testId="latency-table"
              rows={Object.entries(r.models).filter(([, m]) => !modality || m.modality === modality)}
              rowKey={([id]) => id}
              columns={COLUMNS}
            />
          )}
        </QueryView>
      </Card>
    </Page>
  );
}
