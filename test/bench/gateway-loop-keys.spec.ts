import { loopHeaders } from '../../bench/gateway/loop-keys';

describe('the gateway benchmark spreads its closed loops over the organizations (BENCH_GATEWAY_ORGANIZATIONS)', () => {
  const headers = { 'content-type': 'application/json', 'x-api-key': 'first' };

  it('gives loop i the key of organization i mod N, so 16 loops over 4 organizations are 4 each', () => {
    const keys = ['a', 'b', 'c', 'd'];
    const taken = Array.from({ length: 16 }, (_, loop) => loopHeaders(headers, keys, loop)['x-api-key']);
    expect(taken.slice(0, 5)).toEqual(['a', 'b', 'c', 'd', 'a']);
    for (const key of keys) expect(taken.filter((each) => each === key)).toHaveLength(4);
  });

  it('keeps the other headers, and leaves the target as it is with no keys to spread', () => {
    expect(loopHeaders(headers, ['z'], 3)).toEqual({ 'content-type': 'application/json', 'x-api-key': 'z' });
    expect(loopHeaders(headers, undefined, 3)).toBe(headers);
    expect(loopHeaders(headers, [], 3)).toBe(headers);
  });
});
