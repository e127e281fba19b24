/**
 * The gateway's opt-in per-phase timing (bench/README.md "Where the 21 ms go"): an admitted call,
 * through the real service, marks each phase of GATEWAY_PHASES once, in order, on the phase channel,
 * with its request id and a time only.
 */
import { GATEWAY_PHASES, gatewayPhaseChannel, type GatewayPhaseMark } from '../../src/gateway/gateway-http.channels';
import { messageReply } from '../support/messages-api-server';
import { GATEWAY_MODEL, startGatewayService, type GatewayService } from './support/gateway-service';

describe('the gateway marks each phase of a call, in order, for whoever listens (bench/README.md)', () => {
  let service: GatewayService;
  const marks: GatewayPhaseMark[] = [];
  let callerDone: () => void;
  const ended = new Promise<void>((resolve) => (callerDone = resolve));
  const onMark = (message: unknown): void => {
    marks.push(message as GatewayPhaseMark);
    if ((message as GatewayPhaseMark).phase === 'caller_done') callerDone();
  };

  beforeAll(async () => {
    service = await startGatewayService();
    gatewayPhaseChannel.subscribe(onMark);
  });
  afterAll(async () => {
    gatewayPhaseChannel.unsubscribe(onMark);
    await service.close();
  });

  it('marks arrived → body read → key checked → estimated → hold decided → durable → upstream → settled → caller done, once each, times in order', async () => {
    service.upstream.reply(messageReply({}));
    await service.client().messages.create({ model: GATEWAY_MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] });
    await ended;

    expect(marks.map((mark) => mark.phase)).toEqual([...GATEWAY_PHASES]);
    expect(new Set(marks.map((mark) => mark.requestId)).size).toBe(1);
    for (let index = 1; index < marks.length; index++) expect(marks[index]!.at).toBeGreaterThanOrEqual(marks[index - 1]!.at);
    // Nothing of the body: a request id, a phase and a time.
    for (const mark of marks) expect(Object.keys(mark).sort()).toEqual(['at', 'phase', 'requestId']);
  });
});
