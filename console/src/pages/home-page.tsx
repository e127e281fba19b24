import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { invocationHref, operationHref, organizationHref, Section, usePageTitle } from '../components/common';

/** Opens a page by the id a ticket or a log line gives. */
function OpenById({ id, label, hrefOf }: { id: string; label: string; hrefOf: (id: string) => string }) {
  const { route } = useLocation();
  const [value, setValue] = useState('');
  return (
    <form
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        const trimmed = value.trim();
        if (trimmed !== '') route(hrefOf(trimmed));
      }}
    >
      <label for={id}>{label}</label>
      <input id={id} type="text" required spellcheck={false} value={value} onInput={(event) => setValue(event.currentTarget.value)} />
      <button type="submit">Open</button>
    </form>
  );
}

export function HomePage() {
  usePageTitle('Console');
  return (
    <>
      <h1>Console</h1>
      <p>Open what a ticket is about. Each page has its own address to paste back into it.</p>
      <Section id="open" title="Open">
        <OpenById id="open-invocation" label="Invocation id" hrefOf={invocationHref} />
        <OpenById id="open-organization" label="Organization id" hrefOf={organizationHref} />
        <OpenById id="open-operation" label="Operation id" hrefOf={operationHref} />
      </Section>
    </>
  );
}
