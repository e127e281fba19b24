import { createParser } from 'eventsource-parser';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, segment, withQuery, type ApiClient } from '../api/client';
import type { InvocationProgress, InvocationStatus, LoggedEvent, StreamPage } from '../api/types';
import type { Loaded } from '../api/use-api';
import { useSession } from '../session/session';
import { timelineFromEvents, timelineFromProgress, timelineFromStatus, type TimelineEntry } from './timeline';

export interface Lifecycle {
  readonly entries: readonly TimelineEntry[];
  /** True when the token may not read the log and only the view's own dates are shown. */
  readonly partial: boolean;
}

/** Every event of a stream, following the API's pages. */
async function readStream(get: <T>(path: string, signal?: AbortSignal) => Promise<T>, streamName: string, signal: AbortSignal): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = [];
  let from: string | undefined = '0';
  while (from !== undefined) {
    const page: StreamPage = await get<StreamPage>(withQuery(`/v1/streams/${segment(streamName)}`, { from }), signal);
    events.push(...page.events);
    from = page.nextFrom;
  }
  return events;
}

/**
 * Follows `GET /v1/invocations/:id/events` (Server-Sent Events, read with fetch because EventSource
 * cannot send the Authorization header) until the service closes it after settlement.
 */
async function followEvents(api: ApiClient, invocationId: string, signal: AbortSignal, onEvents: (events: InvocationProgress[]) => void): Promise<void> {
  const response = await api.fetch(`/v1/invocations/${segment(invocationId)}/events`, { headers: { Accept: 'text/event-stream' }, signal });
  const events: InvocationProgress[] = [];
  const parser = createParser({
    onEvent: (message) => {
      if (message.event === undefined) return;
      events.push(JSON.parse(message.data) as InvocationProgress);
      onEvents([...events]);
    },
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(value);
  }
  onEvents([...events]);
}

/**
 * The invocation's lifecycle events, live from its event stream; where that cannot be read, from
 * the log itself. A token that may not read the log (403) gets
 * the two dates of the invocation's view instead.
 */
export function useLifecycle(invocationId: string, status: Loaded<InvocationStatus>, refresh: unknown): Loaded<Lifecycle> {
  const { api } = useSession();
  const [loaded, setLoaded] = useState<Loaded<Lifecycle>>({ status: 'loading' });
  const [logReadable, setLogReadable] = useState(true);

  useEffect(() => {
    setLoaded({ status: 'loading' });
    setLogReadable(true);
  }, [invocationId]);

  const [followed, setFollowed] = useState<'trying' | 'no'>('trying');
  useEffect(() => setFollowed('trying'), [invocationId]);
  useEffect(() => {
    if (followed !== 'trying') return undefined;
    const controller = new AbortController();
    followEvents(api, invocationId, controller.signal, (events) =>
      setLoaded({ status: 'ok', data: { entries: timelineFromProgress(events), partial: false } }),
    ).catch(() => {
      if (!controller.signal.aborted) setFollowed('no');
    });
    return () => controller.abort();
  }, [api, invocationId, followed]);

  useEffect(() => {
    if (followed !== 'no' || !logReadable) return undefined;
    const controller = new AbortController();
    readStream((path, signal) => api.get(path, signal), `invocation-${invocationId}`, controller.signal).then(
      (events) => setLoaded({ status: 'ok', data: { entries: timelineFromEvents(events), partial: false } }),
      (error: unknown) => {
        if (controller.signal.aborted) return;
        if (error instanceof ApiError && error.status === 403) setLogReadable(false);
        else setLoaded({ status: 'error', error });
      },
    );
    return () => controller.abort();
  }, [api, invocationId, refresh, logReadable, followed]);

  useEffect(() => {
    if (followed !== 'no' || logReadable) return;
    if (status.status === 'ok') setLoaded({ status: 'ok', data: { entries: timelineFromStatus(status.data), partial: true } });
    else setLoaded(status);
  }, [logReadable, status, followed]);

  return loaded;
}
