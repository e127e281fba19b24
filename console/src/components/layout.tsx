import type { ComponentChildren } from 'preact';
import { useSession } from '../session/session';

export function Layout({ children }: { children: ComponentChildren }) {
  const { signOut } = useSession();
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/console">
          llm-ledger console
        </a>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
