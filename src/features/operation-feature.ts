import type { AnswerToolSpec, Message, Provider, ProviderFeatures, TextBlock, TextJudge, ToolSpec } from '../runtime';
import { DomainError } from '../domain/domain.errors';

/**
 * What a consuming feature registers for one operation: how a request's input becomes a conversation,
 * with the tools the model may call and the judge of its final answer. Routing, limits and prices are
 * NOT here: they come from the operation's publication, and a feature cannot replace them
 * (BR-CAP-PFM-LLM-002-13).
 */
export interface OperationFeature {
  /** The published operation this feature serves, e.g. `demo.arithmetic`. */
  readonly operationId: string;
  /**
   * Validates the request's `input` and builds the conversation. Throws InvalidFeatureInputError for
   * bad input, before anything is written. The result stays in memory: no part of it is ever stored.
   */
  prepare(input: unknown): PreparedConversation;
  /**
   * The offline model used when the publication routes to the `scripted` provider: a fresh provider
   * per invocation (a scripted provider plays its own script).
   */
  readonly scriptedModel?: () => Provider;
  /**
   * How long, in ms, a completed invocation's answer is kept for keyed repeats that arrive after it
   * settled (at most MAX_ANSWER_RETENTION_MS). Left out, no answer is kept: such a repeat is told the
   * answer is no longer available. Kept answers live outside the event log and are deleted on expiry.
   */
  readonly answerRetentionMs?: number;
}

export interface PreparedConversation {
  readonly system: readonly TextBlock[];
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
  readonly answerTool?: AnswerToolSpec;
  readonly textJudge?: TextJudge;
  /**
   * Provider-side features for this conversation: server tools such as Anthropic's web search, and
   * extended thinking. Their blocks stay in the conversation and go back to the provider unchanged;
   * what they cost is priced from the usage the provider reports (web searches per thousand).
   */
  readonly providerFeatures?: ProviderFeatures;
}

/** A request whose `input` the feature cannot use; `field` is a path inside `input`. */
export class InvalidFeatureInputError extends DomainError {
  override readonly name = 'InvalidFeatureInputError';

  constructor(
    readonly field: string,
    problem: string,
  ) {
    super('invalid_feature_input', `${field}: ${problem}`, [{ field, message: problem }]);
  }
}
