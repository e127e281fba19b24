import { readAnthropicConfig } from '../../../src/providers/anthropic';

const KEY = 'sk-ant-test-config-SECRET';

describe('readAnthropicConfig (SPEC §8, §10)', () => {
  it('reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL', () => {
    expect(readAnthropicConfig({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: 'http://127.0.0.1:8080' })).toEqual({
      apiKey: KEY,
      baseURL: 'http://127.0.0.1:8080',
    });
  });

  it('leaves the base URL unset when the variable is absent or blank, so the public API is used', () => {
    expect(readAnthropicConfig({ ANTHROPIC_API_KEY: KEY })).toEqual({ apiKey: KEY });
    expect(readAnthropicConfig({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: '  ' })).toEqual({ apiKey: KEY });
  });

  it('returns nothing without a key, so the service can route to its scripted model offline', () => {
    expect(readAnthropicConfig({})).toBeUndefined();
    expect(readAnthropicConfig({ ANTHROPIC_API_KEY: '   ', ANTHROPIC_BASE_URL: 'http://127.0.0.1:1' })).toBeUndefined();
  });

  it('refuses a base URL that is not http(s), naming the variable and never the key', () => {
    const read = () => readAnthropicConfig({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: 'ftp://example.invalid' });
    expect(read).toThrow(/ANTHROPIC_BASE_URL/);
    try {
      read();
    } catch (error) {
      expect(String(error)).not.toContain(KEY);
    }
  });
});
