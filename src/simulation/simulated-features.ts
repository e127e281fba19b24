/**
 * The operations of a simulated ledger, registered like any consuming feature
 * (LedgerFeaturesModule.register). Each request's `input` names its episode (`{ tag }`); the
 * conversation's first message carries the tag too, which is how the one scripted model of an
 * operation finds the episode a request belongs to (a feature's `scriptedModel()` is not told).
 */
import { InvalidFeatureInputError, type OperationFeature, type PreparedConversation } from '../features/operation-feature';
import { ScriptedProvider, type ProviderRequest, type ScriptedStep } from '../runtime';
import type { SimulatedEpisode } from './simulated-episode';
import type { OperationPlan } from './scenario';
import type { SimulationClock } from './simulation-clock';
import { MAX_MODEL_CALLS_PER_INVOCATION } from './simulation.bounds';

/** Prefix of the first user message; the rest is the episode's tag. */
const TAG_PREFIX = 'simulated request ';

// One schema object each, so the runtime compiles each schema once for the whole run.
const LOOKUP_SCHEMA = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };
const NOTE_SCHEMA = { type: 'object', properties: { text: { type: 'string' } } };
const ARCHIVE_SCHEMA = { type: 'object' };
const ANSWER_SCHEMA = { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] };

/** Finds the episode of a tag; throws for a tag the scenario never planned. */
export type EpisodeLookup = (tag: string) => SimulatedEpisode;

export function simulatedFeatures(operations: readonly OperationPlan[], episodes: EpisodeLookup, clock: SimulationClock): OperationFeature[] {
  return operations.map((operation) => ({
    operationId: operation.id,
    prepare: (input: unknown) => prepare(episodes(tagOf(input)), operation),
    scriptedModel: () => new ScriptedProvider(steps(episodes), { clock, recordRequests: false }),
  }));
}

function tagOf(input: unknown): string {
  const tag = (input as { tag?: unknown } | null)?.tag;
  if (typeof tag !== 'string' || tag.length === 0) throw new InvalidFeatureInputError('tag', 'must name the episode');
  return tag;
}

function prepare(episode: SimulatedEpisode, operation: OperationPlan): PreparedConversation {
  const conversation: PreparedConversation = {
    system: [{ type: 'text', text: 'A simulated operation. Look things up, then answer.', stable: true }],
    messages: [{ role: 'user', content: [{ type: 'text', text: `${TAG_PREFIX}${episode.tag}` }] }],
    tools: [
      { name: 'lookup', description: 'Looks something up.', inputSchema: LOOKUP_SCHEMA, effect: 'read', handler: (_input, context) => episode.runTool('lookup', context) },
      { name: 'note', description: 'Writes a note down.', inputSchema: NOTE_SCHEMA, effect: 'write', handler: (_input, context) => episode.runTool('note', context) },
      // Declared without a handler: a call is answered `unavailable_tool` (BR-CAP-PFM-LLM-002-15).
      { name: 'archive', description: 'Archives the conversation.', inputSchema: ARCHIVE_SCHEMA, effect: 'write' },
    ],
  };
  if (operation.style === 'text-answer') {
    return { ...conversation, textJudge: (text, context) => episode.judgeAnswer(text, context) };
  }
  return {
    ...conversation,
    answerTool: {
      name: 'submit_answer',
      description: 'Submits the final answer.',
      inputSchema: ANSWER_SCHEMA,
      judge: (answer, context) => episode.judgeAnswer(answer, context),
    },
  };
}

/** The model's script: each step asks the request's episode for its next response. */
function* steps(episodes: EpisodeLookup): Generator<ScriptedStep> {
  for (let index = 0; index < MAX_MODEL_CALLS_PER_INVOCATION; index++) {
    yield (request: ProviderRequest, call) => episodes(tagOfRequest(request)).respond(call);
  }
}

function tagOfRequest(request: ProviderRequest): string {
  const first = request.messages[0]?.content[0];
  if (first?.type !== 'text' || !first.text.startsWith(TAG_PREFIX)) throw new Error('a simulated request lost its tag');
  return first.text.slice(TAG_PREFIX.length);
}
