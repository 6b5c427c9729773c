import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api } from "../api/client";
import { manageQueries } from "../api/queries/manage";
import type { ModelCreateBody, ModelView } from "../api/types";
import { useAuth } from "../auth";
import { Badge, Card, ErrorBox, Page, QueryView, Select, useParam } from "../ui/components";
import { DeleteWithPreview } from "../ui/DeleteWithPreview";
import { MODALITIES } from "../ui/hooks";
import { type Column, dash, Table } from "../ui/Table";

export function ModelsPage() {
  const { whoami } = useAuth();
  const canManage = whoami.can.manage;
  const qc = useQueryClient();
  const [modality, setModality] = useParam("modality");
  const list = useQuery(manageQueries.models());
  const refresh = () => qc.invalidateQueries({ queryKey: manageQueries.models().queryKey });
  const columns: Column<ModelView>[] = [
    { header: "Model", cell: (m) => m.model_id },
    { header: "Modality", cell: (m) => <Badge tone="info">{m.modality}</Badge> },
    { header: "Provider", cell: (m) => m.provider_id },
    { header: "Display name", cell: (m) => m.display_name ?? dash },
    { header: "Language", cell: (m) => m.default_language ?? dash },
    { header: "Source", cell: (m) => <Badge tone={m.source === "db" ? "info" : "muted"}>{m.source}</Badge> },
    ...(canManage
      ? [
          {
            header: "Actions",
            className: "actions",
            cell: (m: ModelView) =>
              m.source === "db" ? (
                <DeleteWithPreview path={`/v1/models/${m.model_id}`} what={`model ${m.model_id}`} onDeleted={refresh} action="delete models" />
              ) : (
                <span className="muted small">read-only (yaml)</span>
              ),
          },
        ]
      : []),
  ];
  return (
    <Page title="Models" actions={<Select label="Modality" value={modality} onChange={setModality} options={[{ value: "", label: "All" }, ...MODALITIES]} />}>
      <div className={canManage ? "grid manage" : ""}>
        <Card title="Models" wide={!canManage}>
          <QueryView query={list} action="read models" isEmpty={(l) => l.models.length === 0} empty="No models configured.">
            {(l) => (
              <Table testId="models-table" rows={l.models.filter((m) => !modality || m.modality === modality)} rowKey={(m) => m.model_id} columns={columns} />
            )}
          </QueryView>
        </Card>
        {canManage ? <ModelForm onDone={refresh} /> : null}
      </div>
    </Page>
  );
}

function ModelForm({ onDone }: { onDone: () => void }) {
  const [modality, setModality] = useState<ModelCreateBody["modality"]>("llm");
  const [provider, setProvider] = useState("");
  const [name, setName] = useState("");
  const [display, setDisplay] = useState("");
  const save = useMutation({
    mutationFn: () =>
      api<unknown>("POST", "/v1/models", {
        modality,
        provider_id: provider.trim(),
        model_name: name.trim(),
        display_name: display.trim() || null,
      } satisfies ModelCreateBody),
    onSuccess: () => {
      setName("");
      setDisplay("");
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Card title="New model">
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Modality</span>
          <select name="modality" value={modality} onChange={(e) => setModality(e.target.value as ModelCreateBody["modality"])}>
            {MODALITIES.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Provider id</span>
          <input name="provider_id" required value={provider} onChange={(e) => setProvider(e.target.value)} />
        </label>
        <label className="field">
          <span>Model name</span>
          <input name="model_name" required value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label className="field">
          <span>Display name</span>
          <input name="display_name" value={display} onChange={(e) => setDisplay(e.target.value)} />
        </label>
        {save.isError ? <ErrorBox error={save.error} action="change models" /> : null}
        <div className="buttons">
          <button type="submit" className="primary" disabled={save.isPending}>
            Add model
          </button>
        </div>
      </form>
    </Card>
  );
}
