import { useQuery } from "@tanstack/react-query";
import { billingQueries } from "../../api/queries/billing";
import { Card, Money, QueryView, Tile, Time, useParam } from "../../ui/components";
import { count, num, pct } from "../../ui/format";
import { Table } from "../../ui/Table";

/** Revenue, cost and margin per tenant for a window (dates in the URL); a tenant's line items on click. */
export function Usage() {
  const [from, setFrom] = useParam("from");
  const [to, setTo] = useParam("to");
  const [tenant, setTenant] = useParam("tenant");
  const usage = useQuery(billingQueries.usage(from, to, tenant));
  return (
    <Card title="Usage and margin per tenant" wide>
      <div className="toolbar">
        <label className="field inline">
          <span>From</span>
          <input type="date" value={from.slice(0, 10)} onChange={(e) => setFrom(e.target.value)} />
        </label>
        <label className="field inline">
          <span>To</span>
          <input type="date" value={to.slice(0, 10)} onChange={(e) => setTo(e.target.value)} />
        </label>
        {tenant ? (
          <button type="button" className="secondary" onClick={() => setTenant("")}>
            All tenants
          </button>
        ) : null}
      </div>
      <QueryView query={usage} action="read usage">
        {(u) => (
          <>
            <p className="muted small">
              Window <Time value={u.from} /> – <Time value={u.to} /> ({u.currency})
            </p>
            <div className="tiles">
              <Tile testId="usage-revenue" label="Rated revenue" value={<Money value={u.totals.rated_revenue_usd} />} hint={`${count(u.totals.requests)} requests`} />
              <Tile label="Recorded cost" value={<Money value={u.totals.recorded_cost_usd} />} />
              <Tile testId="usage-margin" label="Margin" value={<Money value={u.totals.margin_usd} />} hint={pct(u.totals.margin_pct)} />
              <Tile label="Unpriced / uncosted" value={`${count(u.totals.unpriced_requests)} / ${count(u.totals.uncosted_requests)}`} />
            </div>
            {u.tenants.length === 0 ? (
              <p className="state empty">No billable requests in this window.</p>
            ) : (
              <Table
                testId="usage-table"
                rows={u.tenants}
                rowKey={(t) => t.tenant ?? "(operator)"}
                columns={[
                  {
                    header: "Tenant",
                    cell: (t) =>
                      t.tenant === null ? (
                        <span className="muted">(no tenant)</span>
                      ) : (
                        <button type="button" className="link" onClick={() => setTenant(t.tenant ?? "")}>
                          {t.tenant}
                        </button>
                      ),
                  },
                  { header: "Requests", align: "r", className: "num", cell: (t) => count(t.requests) },
                  { header: "Revenue", align: "r", cell: (t) => <Money value={t.rated_revenue_usd} /> },
                  { header: "Cost", align: "r", cell: (t) => <Money value={t.recorded_cost_usd} /> },
                  { header: "Margin", align: "r", cell: (t) => <Money value={t.margin_usd} /> },
                  { header: "Margin %", align: "r", className: "num", cell: (t) => pct(t.margin_pct) },
                ]}
              />
            )}
            {u.line_items ? (
              <>
                <h3>Line items for {u.tenant}</h3>
                <Table
                  testId="line-items"
                  rows={u.line_items}
                  rowKey={(i) => `${i.modality}/${i.model_id}`}
                  columns={[
                    { header: "Modality", cell: (i) => i.modality },
                    { header: "Model", cell: (i) => i.model_id },
                    { header: "Requests", align: "r", className: "num", cell: (i) => count(i.requests) },
                    { header: "Units in / out", align: "r", className: "num", cell: (i) => `${num(i.input_units)} / ${num(i.output_units)}` },
                    { header: "Revenue", align: "r", cell: (i) => <Money value={i.rated_revenue_usd} /> },
                    { header: "Cost", align: "r", cell: (i) => <Money value={i.recorded_cost_usd} /> },
                    { header: "Margin", align: "r", cell: (i) => <Money value={i.margin_usd} /> },
                    { header: "Rules", cell: (i) => i.rate_rules.map((r) => <code key={r}>{r}</code>) },
                  ]}
                />
              </>
            ) : null}
          </>
        )}
      </QueryView>
    </Card>
  );
}

