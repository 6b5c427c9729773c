import { useQuery } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { logQueries } from "../api/queries/logs";
import { Badge, Card, ErrorBox, Loading, Money, Page, QueryView, Select, statusTone, Time, useParam } from "../ui/components";
import { count, ms, num } from "../ui/format";
import { MODALITIES, useProjectOptions } from "../ui/hooks";
import { VirtualList } from "../ui/VirtualList";

const ROW = 38;

export function LogsPage() {
  const [modality, setModality] = useParam("modality");
  const [project, setProject] = useParam("project");
  const [status, setStatus] = useParam("status");
  const [limit, setLimit] = useParam("limit", "1000");
  const [openId, setOpenId] = useParam("id");
  const projects = useProjectOptions();
  const logs = useQuery({
    ...logQueries.list({ modality, project, status, limit }),
    refetchInterval: 30_000,
  });

  return (
    <Page
      title="Request log"
      actions={
        <>
          <Select label="Modality" value={modality} onChange={setModality} options={[{ value: "", label: "All" }, ...MODALITIES]} />
          <Select label="Status" value={status} onChange={setStatus} options={[{ value: "", label: "All" }, "success", "error", "fallback"]} />
          <Select label="Project" value={project} onChange={setProject} options={projects} />
          <Select label="Rows" value={limit} onChange={setLimit} options={["100", "500", "1000"]} />
        </>
      }
    >
      <div className={openId ? "split" : ""}>
        <Card wide>
          <QueryView query={logs} action="read the request log" isEmpty={(l) => l.length === 0} empty="No requests match these filters.">
            {(rows) => (
              <>
                <div className="logrow head" aria-hidden="true">
                  <span>Time</span>
                  <span>Status</span>
                  <span>Modality</span>
                  <span>Model</span>
                  <span>Project</span>
                  <span className="r">TTFB</span>
                  <span className="r">Total</span>
                  <span className="r">Cost</span>
                </div>
                <VirtualList
                  label={`${rows.length} requests, newest first`}
                  items={rows}
                  rowHeight={ROW}
                  itemKey={(r) => `${r.id}/${r.timestamp}`}
                  height={Math.min(600, Math.max(rows.length, 4) * ROW)}
                  render={(r) => (
                    <button
                      type="button"
                      className={`logrow${r.id === openId ? " selected" : ""}`}
                      data-testid="log-row"
                      onClick={() => setOpenId(r.id)}
                      aria-label={`${r.status} ${r.modality} ${r.model_id} request at ${r.timestamp}`}
                    >
                      <Time value={r.timestamp} />
                      <span>
                        <Badge tone={statusTone(r.status)}>{r.status}</Badge>
                      </span>
                      <span>{r.modality}</span>
                      <span className="ellipsis">{r.model_id}</span>
                      <span className="ellipsis">{r.project}</span>
                      <span className="r num">{ms(r.ttfb_ms)}</span>
                      <span className="r num">{ms(r.total_latency_ms)}</span>
                      <span className="r">
                        <Money value={r.cost_usd} />
                      </span>
                    </button>
                  )}
                />
                <p className="muted small">{count(rows.length)} rows, newest first. Select a row for its detail.</p>
              </>
            )}
          </QueryView>
        </Card>
        {openId ? <LogDetail id={openId} onClose={() => setOpenId("")} /> : null}
      </div>
    </Page>
  );
}

function Field({ name, children }: { name: string; children: ReactNode }) {
  return (
    <>
      <dt>{name}</dt>
      <dd>{children ?? <span className="muted">—</span>}</dd>
    </>
  );
}

function LogDetail({ id, onClose }: { id: string; onClose: () => void }) {
  const q = useQuery(logQueries.detail(id));
  return (
    <aside className="card detail" aria-label="Request detail" data-testid="log-detail">
      <div className="detail-head">
        <h2>Request</h2>
        <button type="button" className="link" onClick={onClose}>
          Close
        </button>
      </div>
      {q.isPending ? <Loading /> : q.isError ? <ErrorBox error={q.error} action="read this request" /> : (
        <dl className="kv">
          <Field name="Id">
            <code>{q.data.id}</code>
          </Field>
          <Field name="Time">
            <Time value={q.data.timestamp} />
          </Field>
          <Field name="Status">
            <Badge tone={statusTone(q.data.status)}>{q.data.status}</Badge>
          </Field>
          <Field name="Model">{q.data.model_id}</Field>
          <Field name="Project">{q.data.project}</Field>
          <Field name="Tenant">{q.data.tenant_id}</Field>
          <Field name="Session">{q.data.session_id}</Field>
          <Field name="TTFB">{ms(q.data.ttfb_ms)}</Field>
          <Field name="Total latency">{ms(q.data.total_latency_ms)}</Field>
          <Field name="Cost">
            <Money value={q.data.cost_usd} />
          </Field>
          <Field name="Rated price">
            <Money value={q.data.rated_price_usd} />
          </Field>
          <Field name="Rate rule">{q.data.rate_rule ? <code data-testid="log-rate-rule">{q.data.rate_rule}</code> : null}</Field>
          <Field name="Pricing">{q.data.pricing}</Field>
          <Field name="Fallback from">{q.data.fallback_from}</Field>
          <Field name="Error">{q.data.error_message}</Field>
          <Field name="Probe">{q.data.is_probe ? "yes" : "no"}</Field>
          {Object.entries(q.data.units)
            .filter(([, v]) => v !== null)
            .map(([k, v]) => (
              <Field key={k} name={k.replace(/_/g, " ")}>
                {num(v)}
              </Field>
            ))}
          <Field name="Metadata">{q.data.metadata === null ? null : <pre>{JSON.stringify(q.data.metadata, null, 2)}</pre>}</Field>
        </dl>
      )}
    </aside>
  );
}
