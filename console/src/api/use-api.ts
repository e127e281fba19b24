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
  const [loaded, setLoaded] = useState<Loaded<T>>({ status: 'loading' });
  // A new address starts from nothing rather than showing the previous one's data.
  useEffect(() => setLoaded({ status: 'loading' }), [path]);
  useEffect(() => {
    if (path === undefined) return undefined;
    const controller = new AbortController();
    api.get<T>(path, controller.signal).then(
      (data) => setLoaded({ status: 'ok', data }),
      (error: unknown) => {
        if (!controller.signal.aborted) setLoaded({ status: 'error', error });
      },
    );
    return () => controller.abort();
  }, [api, path, refresh]);
  return loaded;
}
