import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api } from "../api/client";
import { manageQueries } from "../api/queries/manage";
import type { ProjectCreateBody, ProjectCreated, ProjectList, ProjectUpdateBody } from "../api/types";
import { useAuth } from "../auth";
import { Badge, Card, ErrorBox, Money, Page, QueryView } from "../ui/components";
import { DeleteWithPreview } from "../ui/DeleteWithPreview";
import { count } from "../ui/format";
import { type Column, Table } from "../ui/Table";

type ProjectView = ProjectList["projects"][number];

export function ProjectsPage() {
  const { whoami } = useAuth();
  const canManage = whoami.can.manage;
  const qc = useQueryClient();
  const list = useQuery(manageQueries.projects());
  const [editing, setEditing] = useState<ProjectView | null>(null);
  // A new key after each save gives an empty form again.
  const [saved, setSaved] = useState(0);
  const refresh = () => qc.invalidateQueries({ queryKey: manageQueries.projects().queryKey });
  const columns = (stats: ProjectList["stats"]): Column<ProjectView>[] => [
    {
      header: "Project",
      cell: (p) => (
        <>
          <strong>{p.name ?? p.id}</strong>
          <div className="muted small">
            {p.id}
            {p.tags.length > 0 ? ` · ${p.tags.join(", ")}` : ""}
          </div>
        </>
      ),
    },
    { header: "Source", cell: (p) => <Badge tone={p.source === "db" ? "info" : "muted"}>{p.source}</Badge> },
    { header: "Daily budget", align: "r", cell: (p) => (p.daily_budget === null ? <span className="muted">none</span> : <Money value={p.daily_budget} />) },
    { header: "Action", cell: (p) => p.budget_action },
    { header: "Requests 24 h", align: "r", className: "num", cell: (p) => count(stats[p.id]?.requests_today) },
    { header: "Cost 24 h", align: "r", cell: (p) => <Money value={stats[p.id]?.cost_today} /> },
    ...(canManage
      ? [
          {
            header: "Actions",
            className: "actions",
            cell: (p: ProjectView) =>
              p.source === "db" ? (
                <>
                  <button type="button" className="link" onClick={() => setEditing(p)}>
                    Edit
                  </button>
                  <DeleteWithPreview path={`/v1/projects/${encodeURIComponent(p.id)}`} what={`project ${p.id}`} onDeleted={refresh} action="delete projects" />
                </>
              ) : (
                <span className="muted small" title="Defined in voxgate.yaml: change it there">
                  read-only (yaml)
                </span>
              ),
          },
        ]
      : []),
  ];
  return (
    <Page title="Projects">
      <div className={canManage ? "grid manage" : ""}>
        <Card title="Projects" wide={!canManage}>
          <QueryView query={list} action="read projects" isEmpty={(l) => l.projects.length === 0} empty="No projects yet.">
            {(l) => (
              <Table testId="projects-table" rows={l.projects} rowKey={(p) => p.id} columns={columns(l.stats)} />
            )}
          </QueryView>
        </Card>
        {canManage ? <ProjectForm key={editing?.id ?? `new-${saved}`} editing={editing} onDone={() => {
              setEditing(null);
              setSaved((n) => n + 1);
              refresh();
            }} /> : null}
      </div>
    </Page>
  );
}

function ProjectForm({ editing, onDone }: { editing: ProjectView | null; onDone: () => void }) {
  const [id, setId] = useState(editing?.id ?? "");
  const [name, setName] = useState(editing?.name ?? "");
  const [budget, setBudget] = useState(editing?.daily_budget === null || editing === null ? "" : String(editing.daily_budget));
  const [action, setAction] = useState<"warn" | "block">(editing?.budget_action === "block" ? "block" : "warn");
  const [tags, setTags] = useState(editing?.tags.join(", ") ?? "");
  const [description, setDescription] = useState(editing?.description ?? "");
  const save = useMutation({
    mutationFn: () => {
      const fields = {
        name: name.trim() || undefined,
        description: description.trim() || null,
        daily_budget: budget.trim() === "" ? null : Number(budget),
        budget_action: action,
        tags: tags
          .split(",")
          .map((t) => t.trim())
          .filter(Boolean),
      };
      if (editing) return api<unknown>("PATCH", `/v1/projects/${encodeURIComponent(editing.id)}`, fields satisfies ProjectUpdateBody);
      return api<ProjectCreated>("POST", "/v1/projects", { project_id: id.trim(), ...fields } satisfies ProjectCreateBody);
    },
    onSuccess: onDone,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Card title={editing ? `Edit ${editing.id}` : "New project"}>
      <form className="form" onSubmit={submit} data-testid="project-form">
        {editing ? null : (
          <label className="field">
            <span>Project id</span>
            <input name="project_id" required value={id} onChange={(e) => setId(e.target.value)} placeholder="support" />
          </label>
        )}
        <label className="field">
          <span>Name</span>
          <input name="name" value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <div className="row">
          <label className="field">
            <span>Daily budget (USD)</span>
            <input name="daily_budget" inputMode="decimal" value={budget} onChange={(e) => setBudget(e.target.value)} />
          </label>
          <label className="field">
            <span>At budget</span>
            <select name="budget_action" value={action} onChange={(e) => setAction(e.target.value === "block" ? "block" : "warn")}>
              <option value="warn">warn</option>
              <option value="block">block</option>
            </select>
          </label>
        </div>
        <label className="field">
          <span>Tags (comma-separated)</span>
          <input name="tags" value={tags} onChange={(e) => setTags(e.target.value)} />
        </label>
        <label className="field">
          <span>Description</span>
          <textarea name="description" rows={2} value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
        {save.isError ? <ErrorBox error={save.error} action="change projects" /> : null}
        <div className="buttons">
          <button type="submit" className="primary" disabled={save.isPending}>
            {editing ? "Save changes" : "Create project"}
          </button>
          {editing ? (
            <button type="button" className="secondary" onClick={onDone}>
              Cancel
            </button>
          ) : null}
        </div>
      </form>
    </Card>
  );
}
