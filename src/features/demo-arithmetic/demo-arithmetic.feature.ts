import type { AnswerToolSpec, ToolSpec } from '../../runtime';
import { InvalidFeatureInputError, type OperationFeature, type PreparedConversation } from '../operation-feature';
import { ArithmeticError, evaluateExpression, extractExpression } from './arithmetic-expression';
import { demoArithmeticModel } from './demo-arithmetic.model';

export const DEMO_OPERATION_ID = 'demo.arithmetic';
/** Longest question accepted, in characters. */
export const MAX_QUESTION_CHARS = 2_000;

export const CALCULATE_TOOL = 'calculate';
export const SUBMIT_ANSWER_TOOL = 'submit_answer';

const SYSTEM_PROMPT =
  'You answer arithmetic questions. Compute the value with the calculate tool, then give it with the submit_answer tool.';

/**
 * How long the demo keeps an answer for keyed repeats after settlement, in ms: long enough for a client
 * that lost its connection to ask again, and nothing in an arithmetic answer needs forgetting sooner.
 */
export const DEMO_ANSWER_RETENTION_MS = 60 * 60 * 1_000;

// The tools' schemas are made once: each conversation gets its own tools (the judge knows its
// question's value), and the same schema object lets the runtime reuse its compiled validator.
const CALCULATE_INPUT_SCHEMA = {
  type: 'object',
  properties: { expression: { type: 'string', minLength: 1, maxLength: 200 } },
  required: ['expression'],
  additionalProperties: false,
} as const;
const SUBMIT_ANSWER_INPUT_SCHEMA = {
  type: 'object',
  properties: { value: { type: 'number' } },
  required: ['value'],
  additionalProperties: false,
} as const;

/**
 * `demo.arithmetic` (README.md "The demo"): the worked example of a feature. The model may call
 * `calculate`, and answers by calling `submit_answer`, which the judge accepts exactly when the value
 * is right.
 */
export const demoArithmeticFeature: OperationFeature = {
  operationId: DEMO_OPERATION_ID,
  answerRetentionMs: DEMO_ANSWER_RETENTION_MS,
  prepare(input: unknown): PreparedConversation {
    const question = readQuestion(input);
    const expression = extractExpression(question);
    if (expression === undefined) throw new InvalidFeatureInputError('input.question', 'contains no arithmetic expression');
    let expected: number;
    try {
      expected = evaluateExpression(expression);
    } catch (error) {
      throw new InvalidFeatureInputError('input.question', `cannot be computed: ${(error as Error).message}`);
    }
    const calculate: ToolSpec<{ expression: string }> = {
      name: CALCULATE_TOOL,
      description: 'Evaluates an arithmetic expression with + - * / and parentheses, and returns its value.',
      inputSchema: CALCULATE_INPUT_SCHEMA,
      effect: 'read',
      handler: ({ expression: text }) => {
        try {
          return evaluateExpression(text);
        } catch (error) {
          // The parser's own words are safe to show the model (BR-CAP-PFM-LLM-002-09).
          if (error instanceof ArithmeticError) throw new Error(`cannot evaluate: ${error.message}`);
          throw error;
        }
      },
    };
    const submitAnswer: AnswerToolSpec<{ value: number }> = {
      name: SUBMIT_ANSWER_TOOL,
      description: 'Gives the final answer: the numeric value of the expression in the question.',
      inputSchema: SUBMIT_ANSWER_INPUT_SCHEMA,
      judge: ({ value }) =>
        value === expected
          ? { accepted: true }
          : { accepted: false, feedback: `The value ${value} is wrong. Compute the expression again and submit the result.` },
    };
    return {
      system: [{ type: 'text', text: SYSTEM_PROMPT, stable: true }],
      messages: [{ role: 'user', content: [{ type: 'text', text: question }] }],
      tools: [calculate as ToolSpec],
      answerTool: submitAnswer as AnswerToolSpec,
    };
  },
  scriptedModel: demoArithmeticModel,
};

function readQuestion(input: unknown): string {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new InvalidFeatureInputError('input', 'must be an object { question: string }');
  }
  const extra = Object.keys(input).filter((key) => key !== 'question');
  if (extra.length > 0) throw new InvalidFeatureInputError(`input.${extra[0]}`, 'is not a known field');
  const { question } = input as { question?: unknown };
  if (typeof question !== 'string' || question.trim().length === 0) {
    throw new InvalidFeatureInputError('input.question', 'must be a non-empty string');
  }
  if (question.length > MAX_QUESTION_CHARS) {
    throw new InvalidFeatureInputError('input.question', `must be at most ${MAX_QUESTION_CHARS} characters`);
  }
  return question;
}
