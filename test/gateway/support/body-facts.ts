/**
 * The tool facts of a Messages body that declares no tools (`readMessagesBodyFacts`), for tests that
 * build a body's facts by hand.
 */
import type { MessagesBodyFacts } from '../../../src/gateway/gateway-call.port';

export const NO_TOOLS: Pick<MessagesBodyFacts, 'webSearchMaxUses' | 'webFetches' | 'codeExecutionTools' | 'mcpServers' | 'definedTools'> = {
  webSearchMaxUses: [],
  webFetches: [],
  codeExecutionTools: [],
  mcpServers: 0,
  definedTools: 0,
};
