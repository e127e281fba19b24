import { UsageError } from './cli-io';

/** An option a command accepts: `--name <value>`, or a flag without a value. */
export interface OptionSpec {
  /** Placeholder shown in help, e.g. `<url>`; absent for a flag. */
  readonly value?: string;
  /** May be given more than once. */
  readonly repeatable?: boolean;
  readonly description: string;
}

export interface ArgsSpec {
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Names of the positional arguments, in order; all required. */
  readonly positionals: readonly string[];
}

export interface ParsedArgs {
  readonly help: boolean;
  readonly positionals: readonly string[];
  /** Values of each option given; a flag given once maps to `['']`. */
  readonly options: ReadonlyMap<string, readonly string[]>;
}

/** Most arguments one invocation may pass: a bound on what the parser will look at. */
export const MAX_ARGUMENTS = 64;

/**
 * A small, strict parser: `--name value` and `--name=value`, flags, `--` before positionals that start
 * with a dash, `--help`/`-h` anywhere. An unknown option, a missing value, a repeated option that is
 * not repeatable, or a wrong number of positionals is a UsageError; with `--help` only unknown
 * options are (so `--help` works on an incomplete command line).
 */
export function parseArgs(argv: readonly string[], spec: ArgsSpec): ParsedArgs {
  if (argv.length > MAX_ARGUMENTS) throw new UsageError(`too many arguments (${argv.length}; at most ${MAX_ARGUMENTS})`);
  const positionals: string[] = [];
  const options = new Map<string, string[]>();
  let help = false;
  let onlyPositionals = false;
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!;
    if (onlyPositionals || !arg.startsWith('-') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    if (arg === '--') {
      onlyPositionals = true;
      continue;
    }
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    if (!arg.startsWith('--')) throw new UsageError(`unknown option ${arg}`);
    const equals = arg.indexOf('=');
    const name = arg.slice(2, equals === -1 ? undefined : equals);
    const option = Object.prototype.hasOwnProperty.call(spec.options, name) ? spec.options[name] : undefined;
    if (option === undefined) throw new UsageError(`unknown option --${name}`);
    let value = '';
    if (option.value !== undefined) {
      if (equals !== -1) {
        value = arg.slice(equals + 1);
      } else {
        const next = argv[index + 1];
        if (next === undefined || (next.startsWith('--') && next.length > 2)) throw new UsageError(`--${name} needs a value ${option.value}`);
        value = next;
        index += 1;
      }
      if (value.length === 0) throw new UsageError(`--${name} needs a non-empty value ${option.value}`);
    } else if (equals !== -1) {
      throw new UsageError(`--${name} takes no value`);
    }
    const values = options.get(name) ?? [];
    if (values.length > 0 && option.repeatable !== true) throw new UsageError(`--${name} may be given only once`);
    options.set(name, [...values, value]);
  }
  if (!help) {
    if (positionals.length < spec.positionals.length) {
      throw new UsageError(`missing ${spec.positionals.slice(positionals.length).map((name) => `<${name}>`).join(' ')}`);
    }
    if (positionals.length > spec.positionals.length) {
      throw new UsageError(`unexpected argument ${JSON.stringify(positionals[spec.positionals.length])}`);
    }
  }
  return { help, positionals, options };
}

/** The single value of an option, or undefined when it was not given. */
export function optionValue(args: ParsedArgs, name: string): string | undefined {
  return args.options.get(name)?.[0];
}

/** True when a flag was given. */
export function hasFlag(args: ParsedArgs, name: string): boolean {
  return args.options.has(name);
}
