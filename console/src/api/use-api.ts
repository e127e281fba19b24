import { useEffect, useState } from 'preact/hooks';
import { useSession } from '../session/session';

export type Loaded<T> =
  | { readonly status: 'loading' }
  | { readonly status: 'ok'; readonly data: T }
  | { readonly status: 'error'; readonly error: unknown };

/**
 * GETs `path` (nothing while it is undefined) and again whenever it or `refresh` changes; keeps the
 * last good answer on screen while a refresh is in flight.
 */
export function useApi<T>(path: string | undefined, refresh: unknown = 0): Loaded<T> {
  const { api } = useSession();
  // Each answer with the address it answers: a new address starts from nothing rather than showing
  // the previous one's data, from its first render on (a page number and another page's rows never
  // show together).
  const [answer, setAnswer] = useState<{ readonly path: string | undefined; readonly loaded: Loaded<T> }>({ path, loaded: LOADING });
  useEffect(() => {
    if (path === undefined) return undefined;
    const controller = new AbortController();
    api.get<T>(path, controller.signal).then(
      (data) => setAnswer({ path, loaded: { status: 'ok', data } }),
      (error: unknown) => {
        if (!controller.signal.aborted) setAnswer({ path, loaded: { status: 'error', error } });
      },
    );
    return () => controller.abort();
  }, [api, path, refresh]);
  return answer.path === path ? answer.loaded : LOADING;
}

const LOADING = { status: 'loading' } as const;
