import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * No function over MAX_FUNCTION_LINES lines outside tests and benchmarks (docs/architecture.md): every
 * function, method, arrow, accessor and constructor of src/, projections/ and console/src/, parsed with the
 * TypeScript compiler, measured from its first line to its last, blanks and comments included.
 */

const ROOT = resolve(__dirname, '..', '..');
/** The longest a function may be, in lines. */
const MAX_FUNCTION_LINES = 70;
const FOLDERS = ['src', 'projections', 'console/src'];

interface FunctionSpan {
  readonly where: string;
  readonly name: string;
  readonly lines: number;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

/** What a reader calls the function: its own name, or that of the variable, property or class member it is. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (ts.isConstructorDeclaration(node)) return `${node.parent.name?.text ?? '<class>'}.constructor`;
  if (node.name !== undefined) return node.name.getText();
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name !== undefined) return parent.name.getText();
  return '<anonymous>';
}

/** Every function-like node of `text` with its span in lines. */
function functionSpans(file: string, text: string): FunctionSpan[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const spans: FunctionSpan[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      spans.push({ where: `${file}:${first + 1}`, name: nameOf(node as ts.FunctionLikeDeclaration), lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return spans;
}

describe('functions under 70 lines outside tests and benchmarks (docs/architecture.md)', () => {
  it('the measure finds a long function, an arrow, a method and a constructor, each by its name, and counts every line', () => {
    const body = (lines: number): string => Array.from({ length: lines - 2 }, (_, index) => `  const v${index} = ${index};`).join('\n');
    const text = [
      `function long() {\n${body(71)}\n}`,
      `const arrow = () => {\n${body(4)}\n};`,
      `class Box {\n  constructor() {\n${body(3)}\n  }\n  method(): void {}\n}`,
    ].join('\n');
    expect(functionSpans('example.ts', text).map(({ name, lines }) => `${name} ${lines}`)).toEqual(['long 71', 'arrow 4', 'Box.constructor 3', 'method 1']);
  });

  it(`no function, method, arrow, accessor or constructor of src/, projections/ or console/src/ spans more than ${MAX_FUNCTION_LINES} lines`, () => {
    const spans = FOLDERS.flatMap(sourceFiles).flatMap((file) => functionSpans(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(spans.length).toBeGreaterThan(1_000);
    expect(spans.filter(({ lines }) => lines > MAX_FUNCTION_LINES).map(({ where, name, lines }) => `${where} ${name} (${lines} lines)`)).toEqual([]);
  });
});
