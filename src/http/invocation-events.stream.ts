import type { EventStore, RecordedEvent, Subscription } from '../event-store/event-store.port';
import { invocationStreamName } from '../invocations/invocation.events';
import { mayAccessOrganization, type Caller } from '../http-kit/auth/caller';
import { ResourceNotFoundException } from '../http-kit/http-error.body';
import { takeOverResponse, type HttpResponse } from '../http-kit/http.types';
import { InvocationProgressReader } from './invocation-progress';

/** How often an idle event stream sends a comment line, in ms: shorter than a load balancer's idle timeout. */
export const SSE_KEEPALIVE_INTERVAL_MS = 15_000;
/** The events after which an invocation's stream has nothing more to say. */
const FINAL_EVENT_TYPES: ReadonlySet<string> = new Set(['InvocationSettled', 'InvocationRefused']);

export interface InvocationEventsOptions {
  readonly store: EventStore;
  readonly caller: Caller;
  readonly invocationId: string;
  /** Resume after this revision (`Last-Event-ID`); from the start when undefined. */
  readonly after: bigint | undefined;
  readonly response: HttpResponse;
}

/**
 * Writes an invocation's events as Server-Sent Events: first what its stream holds after `after`,
 * then what commits to it, read by a subscription to the log from the last event read, so nothing
 * between the read and the subscription is lost; an event is sent only when its revision follows the
 * last one sent, so nothing is repeated. Ends after the final event, or when the client goes away.
 *
 * Only what the log's head counts is sent: a commit still waiting for its fsync (an append
 * acknowledged at COMMIT) comes later through the subscription, so a follower never sees a state that
 * a read (which waits for the read models to reach the head) does not show yet, or that a power loss
 * could take back.
 */
export async function streamInvocationEvents({ store, caller, invocationId, after, response: platformResponse }: InvocationEventsOptions): Promise<void> {
  const streamName = invocationStreamName(invocationId);
  const head = await store.headPosition();
  const stored = await store.readStream(streamName);
  const first = stored[0];
  const organizationId = (first?.data as { organizationId?: unknown } | undefined)?.organizationId;
  // Another organization's invocation reads exactly like one that does not exist.
  if (first === undefined || typeof organizationId !== 'string' || !mayAccessOrganization(caller, organizationId)) {
    throw new ResourceNotFoundException('invocation', invocationId);
  }

  // Written here as it happens, not returned: the platform (Express or Fastify) leaves it to us.
  const response = takeOverResponse(platformResponse);
  response.statusCode = 200;
  response.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  response.setHeader('Cache-Control', 'no-cache, no-transform');
  // No `Connection` header of ours: one would override a client's `Connection: close`, and Node would then
  // hold the socket for the keep-alive timeout after the stream ends (issue 24, finding 5).
  // Proxies that buffer (nginx) would hold the events back.
  response.setHeader('X-Accel-Buffering', 'no');
  response.flushHeaders();

  const history = head === undefined ? [] : stored.filter((event) => event.position <= head);
  const progress = new InvocationProgressReader(invocationId);
  // Every event is read in order, those up to Last-Event-ID too, so each message names the right state.
  let lastRead = -1n;
  const resumeAfter = after ?? -1n;
  let subscription: Subscription | undefined;
  let keepAlive: NodeJS.Timeout | undefined;
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    if (keepAlive !== undefined) clearInterval(keepAlive);
    const stopping = subscription;
    subscription = undefined;
    // Not awaited: this may run inside the subscription's own handler.
    void stopping?.stop().catch(() => undefined);
    response.end();
  };
  const send = (event: RecordedEvent): void => {
    if (ended || event.revision <= lastRead) return;
    if (event.revision !== lastRead + 1n) {
      // A gap cannot happen when reading one stream in order; refuse to paper over one.
      end();
      return;
    }
    lastRead = event.revision;
    const message = progress.read(event);
    if (event.revision > resumeAfter) response.write(`id: ${event.revision}\nevent: ${event.type}\ndata: ${JSON.stringify(message)}\n\n`);
    if (FINAL_EVENT_TYPES.has(event.type)) end();
  };

  response.on('close', end);
  for (const event of history) send(event);
  // Already final (a client resuming after the last event, or past it): nothing more will come.
  const lastSent = history.at(-1);
  if (lastSent !== undefined && FINAL_EVENT_TYPES.has(lastSent.type)) end();
  if (ended) return;
  keepAlive = setInterval(() => response.write(': keep-alive\n\n'), SSE_KEEPALIVE_INTERVAL_MS);
  keepAlive.unref();
  subscription = store.subscribeToAll(
    (event) => {
      if (event.streamName === streamName) send(event);
    },
    // From the last event sent, or from the head when none is counted yet (each event after it is).
    { after: lastSent?.position ?? head },
  );
}
