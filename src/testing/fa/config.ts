// The fake fa's configuration: its scenario (built-in, inline or file) and the kit's environment.
import { CHILD_ENV } from '../child-env.js';
import { isJsonObject, loadScenarioObject, scenarioLabel } from '../process/scenario-source.js';
import type { FaArgs } from './args.js';
import { FA_BUILTIN_SCENARIOS } from './builtins.js';
import { isFaBuiltinScenarioName } from './scenario.js';
import type { FaScenario } from './scenario.js';

/** A scenario that cannot be loaded: the fake exits 2 with the reason (not 64: that is fa's usage error). */
export class FaScenarioError extends Error {}

export interface FaConfig {
  scenario: FaScenario;
  scenarioName: string;
  args: FaArgs;
  /** The command line after the script, for the transcript. */
  argv: string[];
  transcriptDir?: string;
  ownerPid?: number;
}

const STEP_KINDS = ['text', 'tool', 'compaction', 'pause', 'raw', 'grandchildren', 'hog', 'dieMidFrame', 'crash'];

/** A structural check of a scenario from JSON, so a malformed one is refused with a reason, not a crash mid-run. */
function faScenarioProblems(scenario: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const rounds = scenario['rounds'];
  if (rounds === undefined) return problems;
  if (!Array.isArray(rounds)) return ['rounds must be an array'];
  rounds.forEach((round, index) => {
    if (!isJsonObject(round)) return problems.push(`rounds[${index}] must be an object`);
    const steps = round['steps'];
    if (steps === undefined) return;
    if (!Array.isArray(steps)) return problems.push(`rounds[${index}].steps must be an array`);
    steps.forEach((step, stepIndex) => {
      if (!isJsonObject(step) || !STEP_KINDS.some((kind) => kind in step)) {
        problems.push(`rounds[${index}].steps[${stepIndex}] must be an object with one of ${STEP_KINDS.join(', ')}`);
      }
    });
  });
  return problems;
}

export function loadFaScenario(reference: string): { scenario: FaScenario; name: string } {
  if (isFaBuiltinScenarioName(reference)) return { scenario: FA_BUILTIN_SCENARIOS[reference], name: reference };
  const parsed = loadScenarioObject(reference, (message) => new FaScenarioError(message));
  const problems = faScenarioProblems(parsed);
  if (problems.length > 0) throw new FaScenarioError(`invalid scenario: ${problems.join('; ')}`);
  return { scenario: parsed as FaScenario, name: scenarioLabel(parsed) };
}

export function faConfigFrom(args: FaArgs, argv: string[], env: NodeJS.ProcessEnv): FaConfig {
  const reference = args.scenario ?? (env[CHILD_ENV.scenario] !== undefined ? 'env' : 'tools');
  const { scenario, name } = loadFaScenario(reference);
  const config: FaConfig = { scenario, scenarioName: name, args, argv };
  const transcriptDir = env[CHILD_ENV.transcriptDir];
  if (transcriptDir !== undefined && transcriptDir !== '') config.transcriptDir = transcriptDir;
  const ownerPid = Number(env[CHILD_ENV.ownerPid]);
  if (Number.isInteger(ownerPid) && ownerPid > 0) config.ownerPid = ownerPid;
  return config;
}
