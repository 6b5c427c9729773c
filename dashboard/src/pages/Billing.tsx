import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useMemo, useState } from "react";
import { pricingFormProblems } from "../../../src/billing/rule-form.js";
import { api, ApiError, get } from "../api/client";
import type { GapsResponse, PublicRule, QuoteBatchResponse, RateCardResponse, RuleBody, RuleListResponse, RuleUpsertResponse, UsageResponse } from "../api/types";
import { useAuth } from "../auth";
import { Badge, Card, ErrorBox, Money, Page, QueryView, Time, Tile, useParam } from "../ui/components";
import { count, num, pct } from "../ui/format";
import { MODALITIES } from "../ui/hooks";

const FIXED_UNITS = ["minute", "second", "char", "1k_char", "request"];
const TOKEN_UNITS = ["1m_token", "1k_token"];

export function BillingPage() {
  const { whoami } = useAuth();
  const canEditRules = whoami.can.write && whoami.tenant_id === null;
  return (
    <Page title="Billing">
      <Usage />
      <RateCard canEdit={canEditRules} />
      <Gaps />
    </Page>
  );
}

function Usage() {
  const [from, setFrom] = useParam("from");
  const [to, setTo] = useParam("to");
  const [tenant, setTenant] = useParam("tenant");
  const usage = useQuery({ queryKey: ["usage", from, to, tenant], queryFn: () => get<UsageResponse>("/v1/billing/usage", { from, to, tenant }) });
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
              <table data-testid="usage-table">
                <thead>
                  <tr>
                    <th scope="col">Tenant</th>
                    <th scope="col" className="r">
                      Requests
                    </th>
                    <th scope="col" className="r">
                      Revenue
                    </th>
                    <th scope="col" className="r">
                      Cost
                    </th>
                    <th scope="col" className="r">
                      Margin
                    </th>
                    <th scope="col" className="r">
                      Margin %
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {u.tenants.map((t) => (
                    <tr key={t.tenant ?? "(operator)"}>
                      <td>
                        {t.tenant === null ? (
                          <span className="muted">(no tenant)</span>
                        ) : (
                          <button type="button" className="link" onClick={() => setTenant(t.tenant ?? "")}>
                            {t.tenant}
                          </button>
                        )}
                      </td>
                      <td className="r num">{count(t.requests)}</td>
                      <td className="r">
                        <Money value={t.rated_revenue_usd} />
                      </td>
                      <td className="r">
                        <Money value={t.recorded_cost_usd} />
                      </td>
                      <td className="r">
                        <Money value={t.margin_usd} />
                      </td>
                      <td className="r num">{pct(t.margin_pct)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {u.line_items ? (
              <>
                <h3>Line items for {u.tenant}</h3>
                <table data-testid="line-items">
                  <thead>
                    <tr>
                      <th scope="col">Modality</th>
                      <th scope="col">Model</th>
                      <th scope="col" className="r">
                        Requests
                      </th>
                      <th scope="col" className="r">
                        Units in / out
                      </th>
                      <th scope="col" className="r">
                        Revenue
                      </th>
                      <th scope="col" className="r">
                        Cost
                      </th>
                      <th scope="col" className="r">
                        Margin
                      </th>
                      <th scope="col">Rules</th>
                    </tr>
                  </thead>
                  <tbody>
                    {u.line_items.map((i) => (
                      <tr key={`${i.modality}/${i.model_id}`}>
                        <td>{i.modality}</td>
                        <td>{i.model_id}</td>
                        <td className="r num">{count(i.requests)}</td>
                        <td className="r num">
                          {num(i.input_units)} / {num(i.output_units)}
                        </td>
                        <td className="r">
                          <Money value={i.rated_revenue_usd} />
                        </td>
                        <td className="r">
                          <Money value={i.recorded_cost_usd} />
                        </td>
                        <td className="r">
                          <Money value={i.margin_usd} />
                        </td>
                        <td>
                          {i.rate_rules.map((r) => (
                            <code key={r}>{r}</code>
                          ))}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </>
            ) : null}
          </>
        )}
      </QueryView>
    </Card>
  );
}

const pricing = (r: PublicRule) =>
  r.markup !== null ? `× ${r.markup}` : r.fixed !== null ? `$${r.fixed} / ${r.unit}` : `in $${r.input_price_usd} · out $${r.output_price_usd} / ${r.unit}`;
const scope = (r: PublicRule) =>
  [r.tenant && `tenant ${r.tenant}`, r.plan && `plan ${r.plan}`, r.model ?? r.provider, r.modality].filter(Boolean).join(" · ") || "everything";

function RateCard({ canEdit }: { canEdit: boolean }) {
  const card = useQuery({ queryKey: ["rate-card"], queryFn: () => get<RateCardResponse>("/v1/billing/rate-card") });
  const [editing, setEditing] = useState<PublicRule | null>(null);
  const qc = useQueryClient();
  const remove = useMutation({
    mutationFn: (id: string) => api<unknown>("DELETE", `/v1/billing/rate-card/rules/${encodeURIComponent(id)}`),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["rate-card"] }),
  });
  return (
    <div className={canEdit ? "grid manage" : ""}>
      <Card title="Rate card in effect">
        <QueryView query={card} action="read the rate card">
          {(c) => (
            <>
              <p className="small">
                Default <code>{c.default_rule}</code> · gate <code>{c.gate}</code> · {c.precedence}
              </p>
              <table data-testid="rate-card">
                <thead>
                  <tr>
                    <th scope="col">Scope</th>
                    <th scope="col">Sets</th>
                    <th scope="col">Pricing</th>
                    <th scope="col">Rule</th>
                    <th scope="col">Source</th>
                    {canEdit ? <th scope="col">Actions</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {c.rules.map((r) => (
                    <tr key={`${r.source}/${r.scope_key}`}>
                      <td>{scope(r)}</td>
                      <td>{r.sets}</td>
                      <td className="num">{pricing(r)}</td>
                      <td>
                        <code>{r.rule}</code>
                      </td>
                      <td>
                        <Badge tone={r.source === "db" ? "info" : "muted"}>{r.source}</Badge>
                      </td>
                      {canEdit ? (
                        <td className="actions">
                          <button type="button" className="link" onClick={() => setEditing(r)}>
                            Edit
                          </button>
                          {r.rule_id ? (
                            <button
                              type="button"
                              className="link danger"
                              onClick={() => window.confirm(`Delete the rule for ${scope(r)}?`) && remove.mutate(r.rule_id ?? "")}
                            >
                              Delete
                            </button>
                          ) : null}
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
              {remove.isError ? <ErrorBox error={remove.error} action="delete rate rules" /> : null}
            </>
          )}
        </QueryView>
      </Card>
      {canEdit ? <RuleEditor initial={editing} onSaved={() => setEditing(null)} /> : null}
    </div>
  );
}

interface Draft {
  modality: string;
  provider: string;
  model: string;
  tenant: string;
  plan: string;
  sets: "price" | "cost";
  form: "markup" | "fixed" | "tokens";
  markup: string;
  fixed: string;
  unit: string;
  input: string;
  output: string;
  cached: string;
}

const EMPTY: Draft = { modality: "", provider: "", model: "", tenant: "", plan: "", sets: "price", form: "markup", markup: "", fixed: "", unit: "", input: "", output: "", cached: "" };

function draftOf(r: PublicRule): Draft {
  const s = (v: string | number | null | undefined) => (v === null || v === undefined ? "" : String(v));
  return {
    modality: s(r.modality),
    provider: s(r.provider),
    model: s(r.model),
    tenant: s(r.tenant),
    plan: s(r.plan),
    sets: r.sets,
    form: r.markup !== null ? "markup" : r.fixed !== null ? "fixed" : "tokens",
    markup: s(r.markup),
    fixed: s(r.fixed),
    unit: s(r.unit),
    input: s(r.input_price_usd),
    output: s(r.output_price_usd),
    cached: s(r.cached_input_price_usd),
  };
}

/** The POST body the draft stands for (only the fields of its pricing form). */
function bodyOf(d: Draft): RuleBody {
  const n = (v: string) => (v.trim() === "" ? undefined : Number(v));
  const t = (v: string) => (v.trim() === "" ? undefined : v.trim());
  const body: RuleBody = { sets: d.sets };
  if (t(d.modality)) body.modality = d.modality as RuleBody["modality"];
  if (t(d.provider)) body.provider = t(d.provider);
  if (t(d.model)) body.model = t(d.model);
  if (t(d.tenant)) body.tenant = t(d.tenant);
  if (t(d.plan)) body.plan = t(d.plan);
  if (d.form === "markup") body.markup = n(d.markup);
  if (d.form === "fixed") body.fixed = n(d.fixed);
  if (d.form === "tokens") {
    body.input_price_usd = n(d.input);
    body.output_price_usd = n(d.output);
    body.cached_input_price_usd = n(d.cached);
  }
  if (d.form !== "markup" && t(d.unit)) body.unit = t(d.unit);
  for (const k of Object.keys(body) as (keyof RuleBody)[]) if (body[k] === undefined) delete body[k];
  return body;
}

function RuleEditor({ initial, onSaved }: { initial: PublicRule | null; onSaved: () => void }) {
  const qc = useQueryClient();
  const [d, setD] = useState<Draft>(EMPTY);
  useEffect(() => setD(initial ? draftOf(initial) : EMPTY), [initial]);
  const set = (k: keyof Draft) => (e: { target: { value: string } }) => setD((old) => ({ ...old, [k]: e.target.value }));
  const body = useMemo(() => bodyOf(d), [d]);
  // The API's own 400 matrix (src/billing/rule-form.ts), run in the browser as the user types.
  const problems = useMemo(() => pricingFormProblems(body), [body]);
  const save = useMutation({
    mutationFn: () => api<RuleUpsertResponse>("POST", "/v1/billing/rate-card/rules", body),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ["rate-card"] });
      qc.invalidateQueries({ queryKey: ["quote"] });
      onSaved();
    },
  });
  const quoteModality = d.modality || "";
  const quoteModel = d.model.trim();
  const quote = useQuery({
    queryKey: ["quote", quoteModality, quoteModel, d.tenant, d.plan],
    enabled: quoteModality !== "" && /^[^/\s]+\/\S+$/.test(quoteModel),
    queryFn: () =>
      api<QuoteBatchResponse>("POST", "/v1/billing/rate-card/quote", {
        models: [{ modality: quoteModality, model: quoteModel, tenant: d.tenant || null, plan: d.plan || null }],
      }),
  });
  const serverProblems = save.error instanceof ApiError && Array.isArray(save.error.details) ? (save.error.details as { path: string; message: string }[]) : [];
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (problems.length === 0) save.mutate();
  };
  const units = d.form === "tokens" ? TOKEN_UNITS : FIXED_UNITS;
  const q = quote.data?.models[0];
  return (
    <Card title={initial ? `Edit rule ${initial.rule}` : "New override rule"}>
      <form className="form" onSubmit={submit} data-testid="rule-editor">
        <div className="row">
          <label className="field">
            <span>Modality</span>
            <select value={d.modality} onChange={set("modality")} name="modality">
              <option value="">any</option>
              {MODALITIES.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Model</span>
            <input name="model" value={d.model} onChange={set("model")} placeholder="openai/gpt-4.1-mini" />
          </label>
        </div>
        <div className="row">
          <label className="field">
            <span>Provider</span>
            <input name="provider" value={d.provider} onChange={set("provider")} />
          </label>
          <label className="field">
            <span>Tenant</span>
            <input name="tenant" value={d.tenant} onChange={set("tenant")} />
          </label>
          <label className="field">
            <span>Plan</span>
            <input name="plan" value={d.plan} onChange={set("plan")} />
          </label>
        </div>
        <div className="row">
          <label className="field">
            <span>Sets</span>
            <select name="sets" value={d.sets} onChange={set("sets")}>
              <option value="price">price (what the tenant pays)</option>
              <option value="cost">cost (what the operator pays)</option>
            </select>
          </label>
          <label className="field">
            <span>Pricing form</span>
            <select name="form" value={d.form} onChange={set("form")}>
              <option value="markup">markup (cost plus)</option>
              <option value="fixed">fixed price per unit</option>
              <option value="tokens">token legs (llm)</option>
            </select>
          </label>
        </div>
        <div className="row">
          {d.form === "markup" ? (
            <label className="field">
              <span>Markup ×</span>
              <input name="markup" inputMode="decimal" value={d.markup} onChange={set("markup")} placeholder="1.25" />
            </label>
          ) : null}
          {d.form === "fixed" ? (
            <label className="field">
              <span>Fixed USD</span>
              <input name="fixed" inputMode="decimal" value={d.fixed} onChange={set("fixed")} />
            </label>
          ) : null}
          {d.form === "tokens" ? (
            <>
              <label className="field">
                <span>Input USD</span>
                <input name="input_price_usd" inputMode="decimal" value={d.input} onChange={set("input")} />
              </label>
              <label className="field">
                <span>Output USD</span>
                <input name="output_price_usd" inputMode="decimal" value={d.output} onChange={set("output")} />
              </label>
              <label className="field">
                <span>Cached input USD</span>
                <input name="cached_input_price_usd" inputMode="decimal" value={d.cached} onChange={set("cached")} placeholder="= input" />
              </label>
            </>
          ) : null}
          {d.form !== "markup" ? (
            <label className="field">
              <span>Unit</span>
              <select name="unit" value={d.unit} onChange={set("unit")}>
                <option value="">choose…</option>
                {units.map((u) => (
                  <option key={u}>{u}</option>
                ))}
              </select>
            </label>
          ) : null}
        </div>
        {[...problems, ...serverProblems].length > 0 ? (
          <ul className="problems" role="alert" data-testid="rule-problems">
            {[...problems, ...serverProblems].map((p) => (
              <li key={`${p.path}:${p.message}`}>
                {p.path ? <code>{p.path}</code> : null} {p.message}
              </li>
            ))}
          </ul>
        ) : null}
        {save.isError && serverProblems.length === 0 ? <ErrorBox error={save.error} action="change rate rules" /> : null}
        <div className="quote" data-testid="quote-preview" aria-live="polite">
          <strong>Quote now</strong>{" "}
          {quoteModality === "" || quoteModel === "" ? (
            <span className="muted">give a modality and a full model id to preview its price</span>
          ) : quote.isPending ? (
            "…"
          ) : quote.isError ? (
            <ErrorBox error={quote.error} action="quote prices" />
          ) : q ? (
            <>
              <Badge tone={q.serviceable ? "ok" : "warn"}>{q.serviceable ? "serviceable" : "not serviceable"}</Badge> priced by <code>{q.priced_by}</code>
              {q.rule ? (
                <>
                  {" "}
                  · rule <code data-testid="quote-rule">{q.rule}</code>
                </>
              ) : null}{" "}
              · unit {q.unit}
            </>
          ) : null}
        </div>
        <div className="buttons">
          <button type="submit" className="primary" disabled={problems.length > 0 || save.isPending}>
            {save.isPending ? "Saving…" : "Save rule"}
          </button>
          {initial ? (
            <button type="button" className="secondary" onClick={onSaved}>
              Cancel
            </button>
          ) : null}
        </div>
        {save.isSuccess ? (
          <p className="state ok" role="status">
            Saved {save.data.created ? "new" : "updated"} rule <code>{save.data.rule}</code>.
          </p>
        ) : null}
      </form>
    </Card>
  );
}

function Gaps() {
  const gaps = useQuery({ queryKey: ["gaps"], queryFn: () => get<GapsResponse>("/v1/billing/rate-card/gaps") });
  return (
    <Card title="Pricing gaps" wide>
      <QueryView query={gaps} action="read pricing gaps">
        {(g) => (
          <>
            <p className="small caveat" data-testid="caveat">
              {g.caveat_before}
            </p>
            {g.gaps.length === 0 ? (
              <p className="state empty">Every model that ran could be priced.</p>
            ) : (
              <table data-testid="gaps-table">
                <thead>
                  <tr>
                    <th scope="col">Model</th>
                    <th scope="col">Modality</th>
                    <th scope="col" className="r">
                      Requests
                    </th>
                    <th scope="col" className="r">
                      Unknown
                    </th>
                    <th scope="col" className="r">
                      Unrated
                    </th>
                    <th scope="col" className="r">
                      Self-priced
                    </th>
                    <th scope="col">Last seen</th>
                  </tr>
                </thead>
                <tbody>
                  {g.gaps.map((x) => (
                    <tr key={x.model_id}>
                      <td>{x.model_id}</td>
                      <td>{x.modality}</td>
                      <td className="r num">{count(x.requests)}</td>
                      <td className="r num">{count(x.unknown_requests)}</td>
                      <td className="r num">{count(x.unrated_requests)}</td>
                      <td className="r num">{count(x.self_priced_requests)}</td>
                      <td>
                        <Time value={x.last_seen} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </QueryView>
    </Card>
  );
}

export type { RuleListResponse };
