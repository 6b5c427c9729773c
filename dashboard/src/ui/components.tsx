import type { UseQueryResult } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { useSearchParams } from "react-router";
import { ApiError } from "../api/client";
import { localDate, money } from "./format";

export function Time({ value }: { value: string | number | Date | null | undefined }) {
  const d = localDate(value);
  if (!d) return <span className="muted">—</span>;
  return (
    <time dateTime={new Date(value ?? 0).toISOString()} title={d.utc}>
      {d.text}
    </time>
  );
}

export function Money({ value }: { value: number | null | undefined }) {
  return <span className="num">{money(value)}</span>;
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <div className="state" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {what}…
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state empty">{children}</div>;
}

/** An error in place: the envelope's message; a 403 says what this key cannot do. */
export function ErrorBox({ error, action }: { error: unknown; action?: string }) {
  if (error instanceof ApiError && error.status === 403) {
    return (
      <div className="state forbidden" role="alert">
        This key cannot {action ?? "do this"}: {error.message}
      </div>
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="state error" role="alert">
      {error instanceof ApiError ? <code>{error.code}</code> : null} {message}
    </div>
  );
}

/** Loading, error and empty handling for one query; `children` renders the data. */
export function QueryView<T>({
  query,
  action,
  isEmpty,
  empty,
  children,
}: {
  query: UseQueryResult<T>;
  action: string;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending) return <Loading />;
  if (query.isError) return <ErrorBox error={query.error} action={action} />;
  if (isEmpty?.(query.data)) return <Empty>{empty ?? "Nothing recorded yet."}</Empty>;
  return <>{children(query.data)}</>;
}

export function Page({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-head">
        <h1 id="page-title">{title}</h1>
        {actions ? <div className="page-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

export function Card({ title, children, wide }: { title?: string; children: ReactNode; wide?: boolean }) {
  return (
    <div className={wide ? "card wide" : "card"}>
      {title ? <h2>{title}</h2> : null}
      {children}
    </div>
  );
}

export function Tile({ label, value, hint, testId }: { label: string; value: ReactNode; hint?: ReactNode; testId?: string }) {
  return (
    <div className="tile" data-testid={testId}>
      <div className="tile-label">{label}</div>
      <div className="tile-value">{value}</div>
      {hint ? <div className="tile-hint">{hint}</div> : null}
    </div>
  );
}

/**
 * A filter kept in the URL (deep links): read, and set (empty removes it). Setting it also removes
 * `resets` (a page offset: a new filter starts at the first page) in the same URL update.
 */
export function useParam(name: string, fallback = "", resets: readonly string[] = []): [string, (v: string) => void] {
  const [params, setParams] = useSearchParams();
  const value = params.get(name) ?? fallback;
  const set = (v: string) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (v === "" || v === fallback) next.delete(name);
        else next.set(name, v);
        for (const r of resets) next.delete(r);
        return next;
      },
      { replace: true },
    );
  return [value, set];
}

export function Select({
  label,
  value,
  onChange,
  options,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  options: readonly (string | { value: string; label: string })[];
}) {
  return (
    <label className="field inline">
      <span>{label}</span>
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        {options.map((o) => {
          const opt = typeof o === "string" ? { value: o, label: o } : o;
          return (
            <option key={opt.value} value={opt.value}>
              {opt.label}
            </option>
          );
        })}
      </select>
    </label>
  );
}

export function Segmented({ label, value, onChange, options }: { label: string; value: string; onChange: (v: string) => void; options: readonly string[] }) {
  return (
    <fieldset className="segmented">
      <legend className="sr-only">{label}</legend>
      {options.map((o) => (
        <button key={o} type="button" aria-pressed={value === o} className={value === o ? "on" : ""} onClick={() => onChange(o)}>
          {o}
        </button>
      ))}
    </fieldset>
  );
}

export function Badge({ tone, children }: { tone?: "ok" | "warn" | "bad" | "info" | "muted"; children: ReactNode }) {
  return <span className={`badge ${tone ?? "muted"}`}>{children}</span>;
}

export function statusTone(status: string): "ok" | "warn" | "bad" | "muted" {
  if (status === "success" || status === "ok" || status === "idle") return "ok";
  if (status === "fallback" || status === "warning" || status === "busy") return "warn";
  if (status === "error" || status === "failed" || status === "exceeded") return "bad";
  return "muted";
}
