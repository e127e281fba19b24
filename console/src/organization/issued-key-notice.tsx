import { useState } from 'preact/hooks';
import type { IssuedGatewayKey } from '../api/types';

type Copying = 'not yet' | 'copied' | 'failed';

/**
 * A key just issued or rotated: its secret, shown this once (the service keeps only its SHA-256, so
 * neither it nor the console can show it again), with a button that copies it. "Done" forgets it.
 */
export function IssuedKeyNotice({ issued, rotated, onDone }: { issued: IssuedGatewayKey; rotated: boolean; onDone: () => void }) {
  const [copying, setCopying] = useState<Copying>('not yet');
  const copy = () => navigator.clipboard.writeText(issued.key).then(() => setCopying('copied'), () => setCopying('failed'));
  return (
    <div class="notice secret" role="region" aria-labelledby="issued-key-heading">
      <h3 id="issued-key-heading">{rotated ? `Key “${issued.name}” rotated: its new secret` : `Key “${issued.name}” issued`}</h3>
      <p>
        <strong>Copy the key now: you will not see it again.</strong> The service keeps only its SHA-256, so no one can show it later; if it is
        lost, revoke the key and issue another.
      </p>
      <div class="secret-row">
        <input aria-label="The new key" readOnly value={issued.key} onFocus={(event) => event.currentTarget.select()} />
        <button type="button" onClick={() => void copy()}>
          Copy the key
        </button>
      </div>
      <p role="status" class={copying === 'failed' ? 'error' : 'muted'}>
        {copying === 'copied' ? 'Copied to the clipboard.' : copying === 'failed' ? 'The browser did not let the console copy it: select the key and copy it yourself.' : ''}
      </p>
      <button type="button" class="secondary" onClick={onDone}>
        Done: I have kept the key
      </button>
    </div>
  );
}
