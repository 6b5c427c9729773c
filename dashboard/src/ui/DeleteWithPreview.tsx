import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client";
import { ErrorBox } from "./components";

/**
 * Delete in two steps, as the API does it: DELETE without confirm answers `would_delete` (nothing is
 * deleted), shown here; only "Delete" after that sends `?confirm=true`.
 */
export function DeleteWithPreview({ path, what, onDeleted, action }: { path: string; what: string; onDeleted: () => void; action: string }) {
  const [preview, setPreview] = useState<unknown>(null);
  const ask = useMutation({ mutationFn: () => api<{ would_delete?: unknown }>("DELETE", path), onSuccess: (r) => setPreview(r.would_delete ?? r) });
  const confirm = useMutation({
    mutationFn: () => api<unknown>("DELETE", `${path}?confirm=true`),
    onSuccess: () => {
      setPreview(null);
      onDeleted();
    },
  });
  if (preview !== null) {
    return (
      <div className="confirm" role="alertdialog" aria-label={`Delete ${what}?`}>
        <p>
          Delete <strong>{what}</strong>? This would delete:
        </p>
        <pre data-testid="would-delete">{JSON.stringify(preview, null, 2)}</pre>
        <div className="buttons">
          <button type="button" className="danger" onClick={() => confirm.mutate()} disabled={confirm.isPending}>
            Delete
          </button>
          <button type="button" className="secondary" onClick={() => setPreview(null)}>
            Keep
          </button>
        </div>
        {confirm.isError ? <ErrorBox error={confirm.error} action={action} /> : null}
      </div>
    );
  }
  return (
    <>
      <button type="button" className="link danger" onClick={() => ask.mutate()} disabled={ask.isPending}>
        Delete…
      </button>
      {ask.isError ? <ErrorBox error={ask.error} action={action} /> : null}
    </>
  );
}
