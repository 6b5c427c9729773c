import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { billingQueries, billingWrites } from "../../api/queries/billing";
import type { PublicRule } from "../../api/types";
import { Badge, Card, ErrorBox, QueryView } from "../../ui/components";
import { Table } from "../../ui/Table";
import { RuleEditor } from "./RuleEditor";

const pricing = (r: PublicRule) =>
  r.markup !== null ? `× ${r.markup}` : r.fixed !== null ? `$${r.fixed} / ${r.unit}` : `in $${r.input_price_usd} · out $${r.output_price_usd} / ${r.unit}`;
const scope = (r: PublicRule) =>
  [r.tenant && `tenant ${r.tenant}`, r.plan && `plan ${r.plan}`, r.model ?? r.provider, r.modality].filter(Boolean).join(" · ") || "everything";

export function RateCard({ canEdit }: { canEdit: boolean }) {
  const card = useQuery(billingQueries.rateCard());
  const [editing, setEditing] = useState<PublicRule | null>(null);
  const qc = useQueryClient();
  const remove = useMutation({
    mutationFn: billingWrites.deleteRule,
    onSuccess: () => qc.invalidateQueries({ queryKey: billingQueries.rateCard().queryKey }),
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
              <Table
                testId="rate-card"
                rows={c.rules}
                rowKey={(r) => `${r.source}/${r.scope_key}`}
                columns={[
                  { header: "Scope", cell: scope },
                  { header: "Sets", cell: (r) => r.sets },
                  { header: "Pricing", className: "num", cell: pricing },
                  { header: "Rule", cell: (r) => <code>{r.rule}</code> },
                  { header: "Source", cell: (r) => <Badge tone={r.source === "db" ? "info" : "muted"}>{r.source}</Badge> },
                  ...(canEdit
                    ? [
                        {
                          header: "Actions",
                          className: "actions",
                          cell: (r: PublicRule) => (
                            <>
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
                            </>
                          ),
                        },
                      ]
                    : []),
                ]}
              />
              {remove.isError ? <ErrorBox error={remove.error} action="delete rate rules" /> : null}
            </>
          )}
        </QueryView>
      </Card>
      {canEdit ? <RuleEditor initial={editing} onSaved={() => setEditing(null)} /> : null}
    </div>
  );
}

