import { createContext, type ComponentChildren } from 'preact';
import { useContext, useMemo, useState } from 'preact/hooks';
import { ApiClient } from '../api/client';
import { SignIn } from './sign-in';

/** Where the token lives: this tab's session storage, gone when the tab closes. */
const TOKEN_KEY = 'llm-ledger.console.token';

interface Session {
  readonly api: ApiClient;
  signOut(): void;
}

const SessionContext = createContext<Session | undefined>(undefined);

function storedToken(): string | undefined {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  } catch {
    // Storage disabled by the browser: the console still works for this page's lifetime.
    return undefined;
  }
}

function storeToken(token: string | undefined): void {
  try {
    if (token === undefined) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // See storedToken.
  }
}

/**
 * Shows its children once the tab has a token, and the sign-in form until then, whatever page was
 * asked for: the address stays the same, so the page appears right after signing in.
 */
export function SessionProvider({ children }: { children: ComponentChildren }) {
  const [token, setToken] = useState(storedToken);
  const [notice, setNotice] = useState<string | undefined>();
  const session = useMemo<Session | undefined>(() => {
    if (token === undefined) return undefined;
    const forget = (message?: string) => {
      storeToken(undefined);
      setNotice(message);
      setToken(undefined);
    };
    return {
      api: new ApiClient(token, () => forget('The service did not accept that token. Sign in again.')),
      signOut: () => forget('Signed out.'),
    };
  }, [token]);

  if (session === undefined) {
    return (
      <SignIn
        notice={notice}
        onToken={(entered) => {
          storeToken(entered);
          setNotice(undefined);
          setToken(entered);
        }}
      />
    );
  }
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (session === undefined) throw new Error('useSession outside SessionProvider');
  return session;
}
