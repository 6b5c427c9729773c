import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api } from "../api/client";
import { manageQueries } from "../api/queries/manage";
import type { ProviderCreateBody, ProviderTestResult, ProviderUpdateBody, ProviderView } from "../api/types";
import { useAuth } from "../auth";
import { Badge, Card, ErrorBox, Page, QueryView } from "../ui/components";
import { DeleteWithPreview } from "../ui/DeleteWithPreview";
import { ms } from "../ui/format";
import { type Column, Table } from "../ui/Table";

/** The server's provider types; `satisfies` fails the build if one is not a type the API accepts. */
const PROVIDER_TYPES = ["openai", "anthropic", "groq", "deepgram", "elevenlabs", "cartesia", "openai_compatible"] as const satisfies readonly ProviderCreateBody["provider_type"][];

export function ProvidersPage() {
  const { whoami } = useAuth();
  const canManage = whoami.can.manage;
  const qc = useQueryClient();
  const list = useQuery(manageQueries.providers());
  const [editing, setEditing] = useState<ProviderView | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: manageQueries.providers().queryKey });
  const columns: Column<ProviderView>[] = [
    {
      header: "Provider",
      cell: (p) => (
        <>
          <strong>{p.provider_id}</strong>
          <div className="muted small">{p.type}</div>
        </>
      ),
    },
    { header: "Type", cell: (p) => p.provider_type },
    { header: "Source", cell: (p) => <Badge tone={p.source === "db" ? "info" : "muted"}>{p.source}</Badge> },
    { header: "Key", cell: (p) => (p.api_key_masked ? <code className="nowrap">{p.api_key_masked}</code> : <span className="muted">none</span>) },
    { header: "Base URL", className: "wrap-any", cell: (p) => p.base_url ?? <span className="muted">vendor default</span> },
    {
      header: "Connectivity",
      cell: (p) => (canManage ? <TestButton id={p.provider_id} /> : <Badge tone={p.configured ? "ok" : "warn"}>{p.configured ? "configured" : "no key"}</Badge>),
    },
    ...(canManage
      ? [
          {
            header: "Actions",
            className: "actions",
            cell: (p: ProviderView) =>
              p.source === "db" ? (
                <>
                  <button type="button" className="link" onClick={() => setEditing(p)}>
                    Edit
                  </button>
                  <DeleteWithPreview
                    path={`/v1/providers/${encodeURIComponent(p.provider_id)}`}
                    what={`provider ${p.provider_id}`}
                    onDeleted={() => {
                      if (editing?.provider_id === p.provider_id) setEditing(null);
                      refresh();
                    }}
                    action="delete providers"
                  />
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
    <Page title="Providers">
      <div className={canManage ? "grid manage" : ""}>
        <Card title="Providers" wide={!canManage}>
          <QueryView query={list} action="read providers" isEmpty={(l) => l.providers.length === 0} empty="No providers configured.">
            {(l) => (
              <Table testId="providers-table" rows={l.providers} rowKey={(p) => p.provider_id} columns={columns} />
            )}
          </QueryView>
        </Card>
        {canManage ? (
          editing ? (
            <ProviderEditForm
              key={editing.provider_id}
              provider={editing}
              onDone={(changed) => {
                setEditing(null);
                if (changed) refresh();
              }}
            />
          ) : (
            <ProviderForm onDone={refresh} />
          )
        ) : null}
      </div>
    </Page>
  );
}

function TestButton({ id }: { id: string }) {
  const test = useMutation({ mutationFn: () => api<ProviderTestResult>("POST", `/v1/providers/${encodeURIComponent(id)}/test`) });
  return (
    <span className="test">
      <button type="button" className="secondary small" onClick={() => test.mutate()} disabled={test.isPending}>
        {test.isPending ? "Testing…" : "Test"}
      </button>{" "}
      {test.data ? (
        <span data-testid={`test-${id}`}>
          <Badge tone={test.data.status === "ok" ? "ok" : "bad"}>{test.data.status}</Badge> {ms(test.data.latency_ms)} {test.data.message ? <span className="muted small">{test.data.message}</span> : null}
        </span>
      ) : null}
      {test.isError ? <ErrorBox error={test.error} action="test providers" /> : null}
    </span>
  );
}

function ProviderForm({ onDone }: { onDone: () => void }) {
  const [id, setId] = useState("");
  const [type, setType] = useState<ProviderCreateBody["provider_type"]>("openai");
  const [key, setKey] = useState("");
  const [baseUrl, setBaseUrl] = useState("");
  const save = useMutation({
    mutationFn: () =>
      api<unknown>("POST", "/v1/providers", {
        provider_id: id.trim(),
        provider_type: type,
        api_key: key || null,
        base_url: baseUrl.trim() || null,
      } satisfies ProviderCreateBody),
    onSuccess: () => {
      setId("");
      setKey("");
      setBaseUrl("");
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Card title="New provider">
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Provider id</span>
          <input name="provider_id" required value={id} onChange={(e) => setId(e.target.value)} />
        </label>
        <ProviderTypeField value={type} onChange={setType} />
        <label className="field">
          <span>API key (stored encrypted, shown masked)</span>
          <input name="api_key" type="password" autoComplete="off" value={key} onChange={(e) => setKey(e.target.value)} />
        </label>
        <label className="field">
          <span>Base URL (optional)</span>
          <input name="base_url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} placeholder="https://…" />
        </label>
        {save.isError ? <ErrorBox error={save.error} action="change providers" /> : null}
        <div className="buttons">
          <button type="submit" className="primary" disabled={save.isPending}>
            Add provider
          </button>
        </div>
      </form>
    </Card>
  );
}

/** The provider type select of the create and edit forms. */
function ProviderTypeField({ value, onChange }: { value: ProviderCreateBody["provider_type"]; onChange: (t: ProviderCreateBody["provider_type"]) => void }) {
  return (
    <label className="field">
      <span>Type</span>
      <select name="provider_type" value={value} onChange={(e) => onChange(e.target.value as ProviderCreateBody["provider_type"])}>
        {PROVIDER_TYPES.map((t) => (
          <option key={t}>{t}</option>
        ))}
      </select>
    </label>
  );
}

/**
 * PATCH /v1/providers/{id} for a db provider: only the fields changed are sent (omitted ones keep
 * their stored value). The stored key is never shown: a blank key field keeps it. Moving base_url
 * without a new key is limited to permitted hosts; the API's refusal is shown in place.
 */
function ProviderEditForm({ provider, onDone }: { provider: ProviderView; onDone: (changed: boolean) => void }) {
  const [type, setType] = useState<ProviderCreateBody["provider_type"]>(
    (PROVIDER_TYPES as readonly string[]).includes(provider.provider_type) ? (provider.provider_type as ProviderCreateBody["provider_type"]) : "openai",
  );
  const [key, setKey] = useState("");
  const [removeKey, setRemoveKey] = useState(false);
  const [baseUrl, setBaseUrl] = useState(provider.base_url ?? "");
  const save = useMutation({
    mutationFn: () => {
      const url = baseUrl.trim() || null;
      const body: ProviderUpdateBody = {
        ...(type !== provider.provider_type && { provider_type: type }),
        ...(url !== provider.base_url && { base_url: url }),
        // An empty api_key removes the stored one; a blank field without the box keeps it.
        ...(removeKey ? { api_key: "" } : key ? { api_key: key } : {}),
      };
      return api<unknown>("PATCH", `/v1/providers/${encodeURIComponent(provider.provider_id)}`, body);
    },
    onSuccess: () => onDone(true),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Card title={`Edit ${provider.provider_id}`}>
      <form className="form" onSubmit={submit} data-testid="provider-edit-form">
        <ProviderTypeField value={type} onChange={setType} />
        <label className="field">
          <span>New API key (blank keeps {provider.api_key_masked ? <code>{provider.api_key_masked}</code> : "no key"})</span>
          <input name="api_key" type="password" autoComplete="off" value={key} disabled={removeKey} onChange={(e) => setKey(e.target.value)} />
        </label>
        {provider.api_key_masked ? (
          <label className="field inline">
            <input type="checkbox" checked={removeKey} onChange={(e) => setRemoveKey(e.target.checked)} />
            <span>Remove the stored key</span>
          </label>
        ) : null}
        <label className="field">
          <span>Base URL (blank for the vendor default)</span>
          <input name="base_url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} placeholder="https://…" />
        </label>
        <p className="muted small">Moving the base URL to another host without a new key is only allowed to the current host, the vendor's own, or a host the operator trusts.</p>
        {save.isError ? <ErrorBox error={save.error} action="change providers" /> : null}
        <div className="buttons">
          <button type="submit" className="primary" disabled={save.isPending}>
            Save changes
          </button>
          <button type="button" className="secondary" onClick={() => onDone(false)}>
            Cancel
          </button>
        </div>
      </form>
    </Card>
  );
}
