import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useEffect, useRef } from 'preact/hooks';
import { useSession, whoIs } from '../session/session';

export function Layout({ children }: { children: ComponentChildren }) {
  const { signOut, me } = useSession();
  const { path } = useLocation();
  const main = useRef<HTMLElement>(null);
  const firstPath = useRef(path);
  // After following a link inside the console, a keyboard or screen-reader user starts at the new
  // page's content, as after a full page load, rather than at the link that is gone.
  useEffect(() => {
    if (path !== firstPath.current) main.current?.focus();
  }, [path]);
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/console">
          llm-ledger console
        </a>
        <span class="signed-in">
          <span class="who">Signed in as {whoIs(me)}</span>
          <button type="button" class="secondary" onClick={signOut}>
            Sign out
          </button>
        </span>
      </header>
      <main id="main" tabIndex={-1} ref={main}>
        {children}
      </main>
    </>
  );
}
