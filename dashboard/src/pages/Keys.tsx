import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api } from "../api/client";
import { manageQueries } from "../api/queries/manage";
import type { ApiKey, MintedKey } from "../api/types";
import { useAuth } from "../auth";
import { Badge, Card, ErrorBox, Page, QueryView, Time } from "../ui/components";
import { Table } from "../ui/Table";

export function KeysPage() {
  const { whoami } = useAuth();
  const qc = useQueryClient();
  const list = useQuery({ ...manageQueries.apiKeys(), enabled: whoami.can.admin });
  const refresh = () => qc.invalidateQueries({ queryKey: manageQueries.apiKeys().queryKey });
  const revoke = useMutation({
    mutationFn: (id: string) => api<unknown>("DELETE", `/v1/api-keys/${encodeURIComponent(id)}`),
    onSuccess: refresh,
  });
  if (!whoami.can.admin) {
    return (
      <Page title="API keys">
        <div className="state forbidden" role="alert">
          This key cannot manage API keys: minting and revoking need the admin scope.
        </div>
      </Page>
    );
  }
  return (
    <Page title="API keys">
      <div className="grid manage">
        <Card title="Keys">
          <QueryView query={list} action="list API keys" isEmpty={(l) => l.length === 0} empty="No minted keys yet.">
            {(keys) => (
              <Table
                testId="keys-table"
                rows={keys}
                rowKey={(k) => k.id}
                columns={[
                  {
                    header: "Name",
                    cell: (k: ApiKey) => (
                      <>
                        {k.name}
                        <div className="muted small">by {k.issued_by ?? "—"}</div>
                      </>
                    ),
                  },
                  { header: "Prefix", cell: (k) => <code>{k.key_prefix}…</code> },
                  { header: "Tenant", cell: (k) => k.tenant_id ?? <span className="muted">all</span> },
                  { header: "Scopes / role", cell: (k) => `${k.scopes.join(", ")} · ${k.role}` },
                  { header: "Created", cell: (k) => <Time value={k.created_at} /> },
                  {
                    header: "State",
                    cell: (k) =>
                      k.revoked_at ? (
                        <Badge tone="bad">
                          revoked <Time value={k.revoked_at} />
                        </Badge>
                      ) : (
                        <Badge tone="ok">active</Badge>
                      ),
                  },
                  {
                    header: "Actions",
                    cell: (k) =>
                      k.revoked_at ? null : (
                        <button
                          type="button"
                          className="link danger"
                          onClick={() => window.confirm(`Revoke the key ${k.name} (${k.key_prefix}…)? Agents using it stop working.`) && revoke.mutate(k.id)}
                        >
                          Revoke
                        </button>
                      ),
                  },
                ]}
              />
            )}
          </QueryView>
          {revoke.isError ? <ErrorBox error={revoke.error} action="revoke keys" /> : null}
        </Card>
        <MintForm onMinted={refresh} />
      </div>
    </Page>
  );
}

function MintForm({ onMinted }: { onMinted: () => void }) {
  const [name, setName] = useState("");
  const [tenant, setTenant] = useState("");
  const [copied, setCopied] = useState(false);
  const mint = useMutation({
    mutationFn: () => api<MintedKey>("POST", "/v1/api-keys", { name: name.trim(), tenant_id: tenant.trim() || null }),
    onSuccess: () => {
      setName("");
      setCopied(false);
      onMinted();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    mint.mutate();
  };
  const copy = async (text: string) => {
    await navigator.clipboard.writeText(text);
    setCopied(true);
  };
  return (
    <Card title="Mint a key">
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Name</span>
          <input name="name" required value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label className="field">
          <span>Tenant (binds the key to one tenant)</span>
          <input name="tenant_id" value={tenant} onChange={(e) => setTenant(e.target.value)} />
        </label>
        {mint.isError ? <ErrorBox error={mint.error} action="mint keys" /> : null}
        <div className="buttons">
          <button type="submit" className="primary" disabled={mint.isPending}>
            Mint key
          </button>
        </div>
      </form>
      {mint.data ? (
        <div className="minted" role="status" data-testid="minted">
          <p>
            <strong>Copy this key now.</strong> It is shown once; Voxgate keeps only its digest.
          </p>
          <code className="plaintext" data-testid="minted-plaintext">
            {mint.data.plaintext}
          </code>
          <button type="button" className="secondary" onClick={() => copy(mint.data.plaintext)}>
            {copied ? "Copied" : "Copy"}
          </button>
        </div>
      ) : null}
    </Card>
  );
}
