import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  /** CSS variable holding the colour (themes follow the system). */
  color: string;
  /** Draw as bars (counts) instead of a line. */
  bars?: boolean;
  /** Second y axis on the right (e.g. requests beside cost). */
  right?: boolean;
}

const cssVar = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";

/**
 * A uPlot time series (canvas: nothing for the CSP to refuse). `x` is epoch seconds. Tooltips show
 * local time; the legend names each series with its value at the cursor.
 */
export function TimeChart({
  x,
  series,
  format,
  formatRight,
  height = 240,
  label,
}: {
  x: number[];
  series: ChartSeries[];
  format: (v: number) => string;
  formatRight?: (v: number) => string;
  height?: number;
  label: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const axisColor = cssVar("--muted");
    const grid = cssVar("--grid");
    const bars = uPlot.paths.bars?.({ size: [0.7, 24] });
    const opts: uPlot.Options = {
      width: Math.max(320, el.clientWidth),
      height,
      cursor: { focus: { prox: 16 } },
      legend: { live: true },
      scales: { x: { time: true }, y: { auto: true, range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] }, r: { auto: true, range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
        { stroke: axisColor, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, values: (_u, vals) => vals.map((v) => format(v)), size: 70 },
        ...(series.some((s) => s.right)
          ? [{ scale: "r", side: 1 as const, stroke: axisColor, grid: { show: false }, values: (_u: uPlot, vals: number[]) => vals.map((v) => (formatRight ?? format)(v)), size: 60 }]
          : []),
      ],
      series: [
        {},
        ...series.map((s) => {
          const color = cssVar(s.color);
          return {
            label: s.label,
            stroke: color,
            width: s.bars ? 0 : 2,
            fill: s.bars ? `${color}66` : `${color}1f`,
            scale: s.right ? "r" : "y",
            value: (_u: uPlot, v: number | null) => (v === null ? "—" : (s.right ? (formatRight ?? format) : format)(v)),
            points: { show: false },
            ...(s.bars && bars ? { paths: bars } : {}),
          };
        }),
      ],
    };
    const plot = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => plot.setSize({ width: Math.max(320, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [x, series, format, formatRight, height]);
  return <div className="chart" ref={host} role="img" aria-label={label} />;
}
