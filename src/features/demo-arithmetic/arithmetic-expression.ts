/**
 * The demo's arithmetic (README.md "The demo"): find the expression in a question and evaluate it exactly as
 * written, with a small recursive-descent parser (never `eval`).
 */

/** Longest expression evaluated, in characters; a question may be longer. */
export const MAX_EXPRESSION_CHARS = 200;
/** Deepest parenthesis nesting evaluated. */
export const MAX_NESTING_DEPTH = 32;

const EXPRESSION_RUN = /[0-9.\s()+\-*/]+/g;

/**
 * The question's expression: its longest run of digits, decimal points, spaces, parentheses and
 * `+ - * /` that contains a digit ("What is 6*7?" → "6*7"), trimmed. Undefined when there is none.
 */
export function extractExpression(question: string): string | undefined {
  let longest: string | undefined;
  for (const match of question.matchAll(EXPRESSION_RUN)) {
    const run = match[0];
    if (/\d/.test(run) && (longest === undefined || run.length > longest.length)) longest = run;
  }
  return longest?.trim();
}

export class ArithmeticError extends Error {
  override readonly name = 'ArithmeticError';
}

/** Evaluates `+ - * /` with the usual precedence, unary minus and parentheses. */
export function evaluateExpression(expression: string): number {
  if (expression.length > MAX_EXPRESSION_CHARS) {
    throw new ArithmeticError(`expression longer than ${MAX_EXPRESSION_CHARS} characters`);
  }
  const tokens = expression.match(/\d+(?:\.\d+)?|\.\d+|[()+\-*/]|\S/g) ?? [];
  let index = 0;
  const peek = (): string | undefined => tokens[index];
  const next = (): string | undefined => tokens[index++];

  const sum = (depth: number): number => {
    let value = product(depth);
    while (peek() === '+' || peek() === '-') value = next() === '+' ? value + product(depth) : value - product(depth);
    return value;
  };
  const product = (depth: number): number => {
    let value = unary(depth);
    while (peek() === '*' || peek() === '/') {
      if (next() === '*') value *= unary(depth);
      else {
        const divisor = unary(depth);
        if (divisor === 0) throw new ArithmeticError('division by zero');
        value /= divisor;
      }
    }
    return value;
  };
  const unary = (depth: number): number => {
    if (peek() === '-') {
      next();
      return -unary(depth);
    }
    if (peek() === '+') {
      next();
      return unary(depth);
    }
    return primary(depth);
  };
  const primary = (depth: number): number => {
    const token = next();
    if (token === '(') {
      if (depth >= MAX_NESTING_DEPTH) throw new ArithmeticError(`parentheses nested deeper than ${MAX_NESTING_DEPTH}`);
      const value = sum(depth + 1);
      if (next() !== ')') throw new ArithmeticError('missing closing parenthesis');
      return value;
    }
    if (token !== undefined && /^(\d+(\.\d+)?|\.\d+)$/.test(token)) return Number(token);
    throw new ArithmeticError(token === undefined ? 'expression ends too early' : `unexpected "${token}"`);
  };

  const value = sum(0);
  if (index < tokens.length) throw new ArithmeticError(`unexpected "${tokens[index]}"`);
  if (!Number.isFinite(value)) throw new ArithmeticError('the result is not a finite number');
  return value;
}
