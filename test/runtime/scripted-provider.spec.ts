import {
  ProviderFault,
  ScriptedProvider,
  VirtualClock,
  scriptedFault,
  scriptedText,
  scriptedToolUse,
  timeoutReason,
  type ProviderRequest,
  type SendOptions,
} from '../../src/runtime';
import { usage } from './fixtures';

const request = (text: string): ProviderRequest => ({
  model: 'asked-model',
  system: [],
  messages: [{ role: 'user', content: [{ type: 'text', text }] }],
  tools: [],
  maxOutputTokens: 10,
});
const options = (signal = new AbortController().signal): SendOptions => ({ timeoutMs: 1_000, signal });

describe('ScriptedProvider plays a script of responses and faults', () => {
  it('answers each request with the next step, defaulting the model to the one requested', async () => {
    const provider = new ScriptedProvider([scriptedText('one', { usage: usage(3, 4) }), scriptedToolUse([{ id: 'c1', name: 'calc' }])]);
    const first = await provider.send(request('a'), options());
    expect(first).toMatchObject({ stopReason: 'end_turn', model: 'asked-model', usage: usage(3, 4) });
    const second = await provider.send(request('b'), options());
    expect(second.content).toEqual([{ type: 'tool_use', id: 'c1', name: 'calc', input: {} }]);
    expect(provider.stepsLeft).toBe(0);
  });

  it('throws a classified ProviderFault for a fault step, details included', async () => {
    const provider = new ScriptedProvider([scriptedFault('rate_limited', { httpStatus: 429, retryAfterMs: 1_500, usage: usage(2) })]);
    const thrown = await provider.send(request('a'), options()).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(ProviderFault);
    expect(thrown).toMatchObject({ classification: 'rate_limited', details: { httpStatus: 429, retryAfterMs: 1_500, usage: usage(2) } });
  });

  it('lets a step be a function of the request, which is how a demo model reads the question', async () => {
    const provider = new ScriptedProvider([(req, call) => scriptedText(`echo ${(req.messages[0]!.content[0] as { text: string }).text} #${call.index}`)]);
    const reply = await provider.send(request('hello'), options());
    expect(reply.content).toEqual([{ type: 'text', text: 'echo hello #0' }]);
  });

  it('records each request as it was when sent, for assertions', async () => {
    const provider = new ScriptedProvider([scriptedText('x'), scriptedText('y')]);
    const messages = [...request('first').messages];
    await provider.send({ ...request('first'), messages }, options());
    messages.push({ role: 'assistant', content: [{ type: 'text', text: 'later' }] });
    await provider.send(request('second'), options());
    expect(provider.requests).toHaveLength(2);
    expect(provider.requests[0]!.messages).toHaveLength(1);
    expect(provider.calls[0]!.timeoutMs).toBe(1_000);
  });

  it('fails loudly, and not as a retryable fault, when the script runs out', async () => {
    const provider = new ScriptedProvider([]);
    const thrown = await provider.send(request('a'), options()).catch((error: unknown) => error);
    expect(thrown).not.toBeInstanceOf(ProviderFault);
    expect(String(thrown)).toContain('ran out of steps');
  });

  it('plays an endless script from a generator', async () => {
    function* forever() {
      for (let n = 0; ; n++) yield scriptedText(`turn ${n}`);
    }
    const provider = new ScriptedProvider(forever());
    for (let n = 0; n < 5; n++) await provider.send(request('a'), options());
    expect(provider.stepsPlayed).toBe(5);
    expect(provider.stepsLeft).toBeUndefined();
  });

  it('simulates latency on the injected clock and gives up when the attempt signal fires', async () => {
    const clock = new VirtualClock();
    const provider = new ScriptedProvider([scriptedText('slow', { latencyMs: 5_000 }), scriptedText('slow', { latencyMs: 5_000 })], { clock });
    const reply = await provider.send(request('a'), options());
    expect(clock.now()).toBe(5_000);
    expect(reply.stopReason).toBe('end_turn');

    const controller = new AbortController();
    void clock.sleep(1_000).then(() => controller.abort(timeoutReason('attempt timed out')));
    const thrown = await provider.send(request('b'), options(controller.signal)).catch((error: unknown) => error);
    expect(thrown).toMatchObject({ classification: 'timeout', details: { timedOut: true } });
    expect(clock.now()).toBe(6_000);
  });
});
