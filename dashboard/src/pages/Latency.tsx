import { useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { get } from "../api/client";
import type { LatencyReport, LatencySeries } from "../api/types";
import { TimeChart } from "../ui/Chart";
import { Badge, Card, Page, QueryView, Segmented, Select, useParam } from "../ui/components";
import { count, ms } from "../ui/format";
import { LATENCY_PERIODS, MODALITIES, useProjectOptions } from "../ui/hooks";

const msAxis = (v: number) => `${Math.round(v)} ms`;

export function LatencyPage() {
  const [period, setPeriod] = useParam("period", "today");
  const [project, setProject] = useParam("project");
  const [modality, setModality] = useParam("modality");
  const projects = useProjectOptions();
  const report = useQuery({ queryKey: ["latency", period, project], queryFn: () => get<LatencyReport>("/api/latency", { period, project }) });
  const series = useQuery({
    queryKey: ["latency-series", period, project, modality],
    queryFn: () => get<LatencySeries>("/api/latency/series", { period, project, modality }),
  });
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
    <Page
      title="Latency"
      actions={
        <>
          <Segmented label="Period" value={period} onChange={setPeriod} options={LATENCY_PERIODS} />
          <Select label="Modality" value={modality} onChange={setModality} options={[{ value: "", label: "All modalities" }, ...MODALITIES]} />
          <Select label="Project" value={project} onChange={setProject} options={projects} />
        </>
      }
    >
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
            <table data-testid="latency-table">
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col">Modality</th>
                  <th scope="col" className="r">
                    Requests
                  </th>
                  <th scope="col" className="r">
                    Avg TTFB
                  </th>
                  <th scope="col" className="r">
                    p50 TTFB
                  </th>
                  <th scope="col" className="r">
                    p95 TTFB
                  </th>
                  <th scope="col" className="r">
                    Avg total
                  </th>
                  <th scope="col" className="r">
                    p50 total
                  </th>
                  <th scope="col" className="r">
                    p95 total
                  </th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(r.models)
                  .filter(([, m]) => !modality || m.modality === modality)
                  .map(([id, m]) => (
                    <tr key={id}>
                      <td>{id}</td>
                      <td>
                        <Badge tone="info">{m.modality}</Badge>
                      </td>
                      <td className="r num">{count(m.requests)}</td>
                      <td className="r num">{ms(m.avg_ttfb_ms)}</td>
                      <td className="r num">{ms(m.p50_ttfb_ms)}</td>
                      <td className="r num strong">{ms(m.p95_ttfb_ms)}</td>
                      <td className="r num">{ms(m.avg_total_latency_ms)}</td>
                      <td className="r num">{ms(m.p50_total_latency_ms)}</td>
                      <td className="r num strong">{ms(m.p95_total_latency_ms)}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          )}
        </QueryView>
      </Card>
    </Page>
  );
}
