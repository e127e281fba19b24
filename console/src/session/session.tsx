import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { ApiClient, ApiError } from '../api/client';
import type { Me } from '../api/types';
import { SignIn } from './sign-in';

/** Where the token lives: this tab's session storage, gone when the tab closes. */
const TOKEN_KEY = 'llm-ledger.console.token';

interface Session {
  readonly api: ApiClient;
  /** Who the token is, as `GET /v1/me` answered at sign-in. */
  readonly me: Me;
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

/** A token on its way in: being checked, or accepted with who it is. */
type Signing = { readonly token: string; readonly me?: Me };

/**
 * Shows its children once the tab has a token the service accepts, and the sign-in form until then,
 * whatever page was asked for: the address stays the same, so the page appears right after signing
 * in. A token is checked with `GET /v1/me` before it is kept, so a mistyped one is refused on the
 * sign-in form itself rather than on the first page that reads something.
 */
export function SessionProvider({ children }: { children: ComponentChildren }) {
  const [signing, setSigning] = useState<Signing | undefined>(() => {
    const token = storedToken();
    return token === undefined ? undefined : { token };
  });
  const [notice, setNotice] = useState<string | undefined>();
  const forget = (message?: string) => {
    storeToken(undefined);
    setNotice(message);
    setSigning(undefined);
  };

  useEffect(() => {
    if (signing === undefined || signing.me !== undefined) return undefined;
    const controller = new AbortController();
    new ApiClient(signing.token, () => {})
      .get<Me>('/v1/me', controller.signal)
      .then((me) => {
        storeToken(signing.token);
        setNotice(undefined);
        setSigning({ token: signing.token, me });
      })
      .catch((error: unknown) => {
        if (controller.signal.aborted) return;
        forget(
          error instanceof ApiError && error.status === 401
            ? 'The service did not accept that token. Check it and sign in again.'
            : `Could not check the token: ${error instanceof Error ? error.message : String(error)}. Try again.`,
        );
      });
    return () => controller.abort();
  }, [signing]);

  const session = useMemo<Session | undefined>(() => {
    if (signing?.me === undefined) return undefined;
    return {
      api: new ApiClient(signing.token, () => forget('The service no longer accepts that token. Sign in again.')),
      me: signing.me,
      signOut: () => forget('Signed out.'),
    };
  }, [signing]);

  if (session === undefined) {
    return <SignIn notice={notice} checking={signing !== undefined} onToken={(token) => setSigning({ token })} />;
  }
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (session === undefined) throw new Error('useSession outside SessionProvider');
  return session;
}

/** `the operator`, `an auditor`, `an admin of demo-org`, `a member of demo-org`. */
export function whoIs(me: Me): string {
  switch (me.role) {
    case 'system':
      return 'an operator (system)';
    case 'auditor':
      return 'an auditor';
    case 'org_admin':
      return `an admin of ${me.organizationId ?? 'an organization'}`;
    case 'org_member':
      return `a member of ${me.organizationId ?? 'an organization'}`;
  }
}
