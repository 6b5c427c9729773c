import type { ReactNode } from "react";
import { Segmented, Select, useParam } from "./components";
import { useProjectOptions } from "./hooks";

/**
 * The period and project filters of a report page, kept in the URL: their values, and their controls
 * for the page's actions (`between`: the page's own filters, shown between the two).
 */
export function useReportFilters(periods: readonly string[], between?: ReactNode): { period: string; project: string; controls: ReactNode } {
  const [period, setPeriod] = useParam("period", "today");
  const [project, setProject] = useParam("project");
  const projects = useProjectOptions();
  const controls = (
    <>
      <Segmented label="Period" value={period} onChange={setPeriod} options={periods} />
      {between}
      <Select label="Project" value={project} onChange={setProject} options={projects} />
    </>
  );
  return { period, project, controls };
}
