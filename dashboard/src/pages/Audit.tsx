import { useQuery } from "@tanstack/react-query";
import { manageQueries } from "../api/queries/manage";
import type { AuditEntry } from "../api/types";
import { Badge, Card, Page, QueryView, Select, Time, useParam } from "../ui/components";
import { type Column, Table } from "../ui/Table";

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

const COLUMNS: Column<AuditEntry>[] = [
  { header: "When", cell: (r) => <Time value={r.ts} /> },
  {
    header: "Actor",
    cell: (r) => (
      <>
        <code>{r.actor}</code>
        {r.tenant_id ? <div className="muted small">tenant {r.tenant_id}</div> : null}
      </>
    ),
  },
  { header: "Action", cell: (r) => <Badge tone={r.action === "delete" ? "bad" : r.action === "create" ? "ok" : "info"}>{r.action}</Badge> },
  {
    header: "Entity",
    cell: (r) => (
      <>
        {r.entity_type} <strong>{r.entity_id}</strong>
      </>
    ),
  },
  { header: "Change", cell: (r) => <Change before={r.before} after={r.after} /> },
];

export function AuditPage() {
  const [entityType, setEntityType] = useParam("entity_type");
  const [entityId, setEntityId] = useParam("entity_id");
  const [action, setAction] = useParam("action");
  const log = useQuery(manageQueries.audit(entityType, entityId, action));
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
            <Table testId="audit-table" rows={rows} rowKey={(r) => r.id} columns={COLUMNS} />
          )}
        </QueryView>
      </Card>
    </Page>
  );
}
