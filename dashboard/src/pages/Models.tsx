import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api, get } from "../api/client";
import type { ModelCreateBody, ModelList } from "../api/types";
import { useAuth } from "../auth";
import { Badge, Card, ErrorBox, Page, QueryView, Select, useParam } from "../ui/components";
import { DeleteWithPreview } from "../ui/DeleteWithPreview";
import { MODALITIES } from "../ui/hooks";

export function ModelsPage() {
  const { whoami } = useAuth();
  const canManage = whoami.can.manage;
  const qc = useQueryClient();
  const [modality, setModality] = useParam("modality");
  const list = useQuery({ queryKey: ["models"], queryFn: () => get<ModelList>("/api/models") });
  const refresh = () => qc.invalidateQueries({ queryKey: ["models"] });
  return (
    <Page title="Models" actions={<Select label="Modality" value={modality} onChange={setModality} options={[{ value: "", label: "All" }, ...MODALITIES]} />}>
      <div className={canManage ? "grid manage" : ""}>
        <Card title="Models" wide={!canManage}>
          <QueryView query={list} action="read models" isEmpty={(l) => l.models.length === 0} empty="No models configured.">
            {(l) => (
              <table data-testid="models-table">
                <thead>
                  <tr>
                    <th scope="col">Model</th>
                    <th scope="col">Modality</th>
                    <th scope="col">Provider</th>
                    <th scope="col">Display name</th>
                    <th scope="col">Language</th>
                    <th scope="col">Source</th>
                    {canManage ? <th scope="col">Actions</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {l.models
                    .filter((m) => !modality || m.modality === modality)
                    .map((m) => (
                      <tr key={m.model_id}>
                        <td>{m.model_id}</td>
                        <td>
                          <Badge tone="info">{m.modality}</Badge>
                        </td>
                        <td>{m.provider_id}</td>
                        <td>{m.display_name ?? <span className="muted">—</span>}</td>
                        <td>{m.default_language ?? <span className="muted">—</span>}</td>
                        <td>
                          <Badge tone={m.source === "db" ? "info" : "muted"}>{m.source}</Badge>
                        </td>
                        {canManage ? (
                          <td className="actions">
                            {m.source === "db" ? (
                              <DeleteWithPreview path={`/v1/models/${m.model_id}`} what={`model ${m.model_id}`} onDeleted={refresh} action="delete models" />
                            ) : (
                              <span className="muted small">read-only (yaml)</span>
                            )}
                          </td>
                        ) : null}
                      </tr>
                    ))}
                </tbody>
              </table>
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
