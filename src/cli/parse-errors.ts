// node:util parseArgs' errors in supervise's words: the option named, the fix, and for a misspelt option the one meant.
import { closestName } from '../text/closest-name.js';
import { UsageError } from './usage-error.js';

const HELP_HINT = "Run 'supervise --help' for the options.";

/**
 * The usage error for a parseArgs error over the options `known` (their long names). `unknownHint`, a sentence,
 * follows the report of an unknown option (where it may belong instead).
 */
export function parseArgsUsageError(error: unknown, known: readonly string[], unknownHint = ''): UsageError {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const option = /'(-[^' ]+)/.exec(message)?.[1] ?? 'an option';
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      // A long option a few edits from a known one is a typo (`--timout`); a far one gets no guess.
      const name = option.startsWith('--') ? option.slice(2).split('=')[0]! : undefined;
      const meant = name === undefined ? undefined : closestName(name, known, Math.max(2, Math.floor(name.length / 3)));
      const head = meant === undefined ? `unknown option ${option}.` : `unknown option ${option}; did you mean --${meant}?`;
      return new UsageError([head, unknownHint, HELP_HINT].filter((sentence) => sentence !== '').join(' '));
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return new UsageError(`option ${option} needs a value, as in ${option} VALUE. ${HELP_HINT}`);
    default:
      return new UsageError(`${message} ${HELP_HINT}`);
  }
}
