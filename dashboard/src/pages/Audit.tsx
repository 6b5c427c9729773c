import { useQuery } from "@tanstack/react-query";
import { get } from "../api/client";
import type { AuditEntry } from "../api/types";
import { Badge, Card, Page, QueryView, Select, Time, useParam } from "../ui/components";

const ENTITY_TYPES = ["provider", "model", "project", "rate_rule", "api_key"];
const ACTIONS = ["create", "update", "delete"];

function Change({ before, after }: { before: unknown; after: unknown }) {
  if (before === null && after === null) return <span className="muted">—</span>;
  return (
    <details>
      <summary>{after === null ? "before" : before === null ? "after" : "before → after"}</summary>
      <pre>{JSON.stringify(before === null ? after : after === null ? before : { before, after }, null, 2)}</pre>
    </details>
  );
}

export function AuditPage() {
  const [entityType, setEntityType] = useParam("entity_type");
  const [entityId, setEntityId] = useParam("entity_id");
  const [action, setAction] = useParam("action");
  const log = useQuery({
    queryKey: ["audit", entityType, entityId, action],
    queryFn: () => get<AuditEntry[]>("/v1/audit-log", { entity_type: entityType, entity_id: entityId, action, limit: 500 }),
  });
  return (
    <Page
      title="Audit log"
      actions={
        <>
          <Select label="Entity" value={entityType} onChange={setEntityType} options={[{ value: "", label: "All" }, ...ENTITY_TYPES]} />
          <label className="field inline">
            <span>Id</span>
            <input type="search" defaultValue={entityId} onKeyDown={(e) => e.key === "Enter" && setEntityId(e.currentTarget.value.trim())} placeholder="entity id, Enter" />
          </label>
          <Select label="Action" value={action} onChange={setAction} options={[{ value: "", label: "All" }, ...ACTIONS]} />
        </>
      }
    >
      <Card wide>
        <QueryView query={log} action="read the audit log" isEmpty={(l) => l.length === 0} empty="No audit entries match.">
          {(rows) => (
            <table data-testid="audit-table">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Action</th>
                  <th scope="col">Entity</th>
                  <th scope="col">Change</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.id}>
                    <td>
                      <Time value={r.ts} />
                    </td>
                    <td>
                      <code>{r.actor}</code>
                      {r.tenant_id ? <div className="muted small">tenant {r.tenant_id}</div> : null}
                    </td>
                    <td>
                      <Badge tone={r.action === "delete" ? "bad" : r.action === "create" ? "ok" : "info"}>{r.action}</Badge>
                    </td>
                    <td>
                      {r.entity_type} <strong>{r.entity_id}</strong>
                    </td>
                    <td>
                      <Change before={r.before} after={r.after} />
                    </td>
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
