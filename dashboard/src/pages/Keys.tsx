import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api, get } from "../api/client";
import type { ApiKey, MintedKey } from "../api/types";
import { useAuth } from "../auth";
import { Badge, Card, ErrorBox, Page, QueryView, Time } from "../ui/components";

export function KeysPage() {
  const { whoami } = useAuth();
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ["api-keys"], queryFn: () => get<ApiKey[]>("/v1/api-keys", { include_revoked: true }), enabled: whoami.can.admin });
  const revoke = useMutation({
    mutationFn: (id: string) => api<unknown>("DELETE", `/v1/api-keys/${encodeURIComponent(id)}`),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["api-keys"] }),
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
              <table data-testid="keys-table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Prefix</th>
                    <th scope="col">Tenant</th>
                    <th scope="col">Scopes / role</th>
                    <th scope="col">Created</th>
                    <th scope="col">State</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {keys.map((k) => (
                    <tr key={k.id}>
                      <td>
                        {k.name}
                        <div className="muted small">by {k.issued_by ?? "—"}</div>
                      </td>
                      <td>
                        <code>{k.key_prefix}…</code>
                      </td>
                      <td>{k.tenant_id ?? <span className="muted">all</span>}</td>
                      <td>
                        {k.scopes.join(", ")} · {k.role}
                      </td>
                      <td>
                        <Time value={k.created_at} />
                      </td>
                      <td>
                        {k.revoked_at ? (
                          <Badge tone="bad">
                            revoked <Time value={k.revoked_at} />
                          </Badge>
                        ) : (
                          <Badge tone="ok">active</Badge>
                        )}
                      </td>
                      <td>
                        {k.revoked_at ? null : (
                          <button
                            type="button"
                            className="link danger"
                            onClick={() => window.confirm(`Revoke the key ${k.name} (${k.key_prefix}…)? Agents using it stop working.`) && revoke.mutate(k.id)}
                          >
                            Revoke
                          </button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </QueryView>
          {revoke.isError ? <ErrorBox error={revoke.error} action="revoke keys" /> : null}
        </Card>
        <MintForm onMinted={() => qc.invalidateQueries({ queryKey: ["api-keys"] })} />
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
