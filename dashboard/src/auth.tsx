import { useQuery, useQueryClient } from "@tanstack/react-query";
import { createContext, type FormEvent, type ReactNode, useContext, useEffect, useState } from "react";
import { ApiError, currentKey, setKey } from "./api/client";
import { manageQueries } from "./api/queries/manage";
import type { Whoami } from "./api/types";
import { ErrorBox, Loading } from "./ui/components";

interface AuthState {
  whoami: Whoami;
  signOut: () => void;
}

const AuthContext = createContext<AuthState | null>(null);

export function useAuth(): AuthState {
  const a = useContext(AuthContext);
  if (!a) throw new Error("useAuth outside AuthGate");
  return a;
}

/** Fired by the query cache on any 401: the key is dropped and the sign-in screen returns. */
export const SIGNED_OUT_EVENT = "voxgate:signed-out";

/**
 * Asks /api/whoami what the key in this tab may do. With auth off every caller is the operator and no
 * sign-in is shown; with auth on, no key or a refused key shows the sign-in screen.
 */
export function AuthGate({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const [key, setKeyState] = useState<string | null>(currentKey());
  const whoami = useQuery(manageQueries.whoami(key));

  useEffect(() => {
    const onSignedOut = () => {
      setKey(null);
      setKeyState(null);
      qc.clear();
    };
    window.addEventListener(SIGNED_OUT_EVENT, onSignedOut);
    return () => window.removeEventListener(SIGNED_OUT_EVENT, onSignedOut);
  }, [qc]);

  const signIn = (k: string) => {
    setKey(k);
    setKeyState(k);
  };
  const signOut = () => window.dispatchEvent(new Event(SIGNED_OUT_EVENT));

  if (whoami.isPending) return <Loading what="Connecting" />;
  if (whoami.isError) {
    if (whoami.error instanceof ApiError && whoami.error.status === 401) {
      return <SignIn onSubmit={signIn} refused={key !== null} />;
    }
    return (
      <main className="signin">
        <ErrorBox error={whoami.error} action="reach Voxgate" />
      </main>
    );
  }
  if (!whoami.data.authenticated) return <SignIn onSubmit={signIn} refused={false} />;
  return <AuthContext.Provider value={{ whoami: whoami.data, signOut }}>{children}</AuthContext.Provider>;
}

function SignIn({ onSubmit, refused }: { onSubmit: (key: string) => void; refused: boolean }) {
  const [value, setValue] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) onSubmit(value.trim());
  };
  return (
    <main className="signin">
      <form className="card signin-card" onSubmit={submit}>
        <div className="brand big">
          <span className="logo" aria-hidden="true" />
          Voxgate
        </div>
        <h1>Sign in</h1>
        <p className="muted">
          Paste a Voxgate API key: a static key from <code>voxgate.yaml</code> / <code>VOXGATE_API_KEY</code>, or a minted <code>vk_</code> key. It is
          kept for this tab only and sent as <code>Authorization: Bearer</code>.
        </p>
        <label className="field">
          <span>API key</span>
          <input
            name="api-key"
            type="password"
            autoComplete="off"
            spellCheck={false}
            // biome-ignore lint/a11y/noAutofocus: the only field of the sign-in screen
            autoFocus
            value={value}
            onChange={(e) => setValue(e.target.value)}
          />
        </label>
        {refused ? (
          <p className="state error" role="alert">
            That key was refused (unknown, revoked or mistyped).
          </p>
        ) : null}
        <button type="submit" className="primary">
          Sign in
        </button>
      </form>
    </main>
  );
}
