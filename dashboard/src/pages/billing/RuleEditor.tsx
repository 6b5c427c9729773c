import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useMemo, useState } from "react";
import { pricingFormProblems } from "../../../../src/billing/rule-form.js";
import { ApiError } from "../../api/client";
import { billingQueries, billingWrites } from "../../api/queries/billing";
import type { PublicRule, RuleBody } from "../../api/types";
import { Badge, Card, ErrorBox } from "../../ui/components";
import { MODALITIES } from "../../ui/hooks";

const FIXED_UNITS = ["minute", "second", "char", "1k_char", "request"];
const TOKEN_UNITS = ["1m_token", "1k_token"];

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

export function RuleEditor({ initial, onSaved }: { initial: PublicRule | null; onSaved: () => void }) {
  const qc = useQueryClient();
  const [d, setD] = useState<Draft>(EMPTY);
  useEffect(() => setD(initial ? draftOf(initial) : EMPTY), [initial]);
  const set = (k: keyof Draft) => (e: { target: { value: string } }) => setD((old) => ({ ...old, [k]: e.target.value }));
  const body = useMemo(() => bodyOf(d), [d]);
  // The API's own 400 matrix (src/billing/rule-form.ts), run in the browser as the user types.
  const problems = useMemo(() => pricingFormProblems(body), [body]);
  const save = useMutation({
    mutationFn: () => billingWrites.upsertRule(body),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: billingQueries.rateCard().queryKey });
      qc.invalidateQueries(billingQueries.quotes());
      onSaved();
    },
  });
  const quoteModality = d.modality || "";
  const quoteModel = d.model.trim();
  const quote = useQuery({
    ...billingQueries.quote({ modality: quoteModality, model: quoteModel, tenant: d.tenant, plan: d.plan }),
    enabled: quoteModality !== "" && /^[^/\s]+\/\S+$/.test(quoteModel),
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

