/**
 * Anthropic settings from the environment (SPEC §10): `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`.
 */
import type { AnthropicProviderOptions } from './anthropic.provider';

export type AnthropicConfig = Pick<AnthropicProviderOptions, 'apiKey' | 'baseURL'>;

/**
 * Reads the Anthropic settings, or returns undefined when no API key is set (the service then runs
 * its scripted model offline). A malformed base URL throws, naming the variable; messages never
 * include the key.
 */
export function readAnthropicConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
): AnthropicConfig | undefined {
  const apiKey = nonEmpty(env.ANTHROPIC_API_KEY);
  if (apiKey === undefined) return undefined;
  const baseURL = nonEmpty(env.ANTHROPIC_BASE_URL);
  if (baseURL !== undefined && !isHttpUrl(baseURL)) {
    throw new Error(`ANTHROPIC_BASE_URL: expected an http(s) URL, got "${baseURL}"`);
  }
  return baseURL === undefined ? { apiKey } : { apiKey, baseURL };
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
