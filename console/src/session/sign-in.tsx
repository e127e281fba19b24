import { useEffect, useRef, useState } from 'preact/hooks';

/** One labelled input for the bearer token; the page asked for shows once it is given. */
export function SignIn({ notice, checking, onToken }: { notice: string | undefined; checking: boolean; onToken: (token: string) => void }) {
  const [value, setValue] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <main id="main" class="sign-in">
      <h1>llm-ledger console</h1>
      <p>Sign in with a bearer token to see what it may read. The token stays in this tab only.</p>
      {notice !== undefined && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          const token = value.trim();
          if (token !== '' && !checking) onToken(token);
        }}
      >
        <label for="token">Bearer token</label>
        <input
          ref={input}
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={value}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        <button type="submit" disabled={checking}>
          {checking ? 'Checking the token…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
