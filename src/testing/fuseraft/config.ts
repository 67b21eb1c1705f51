// The fake fuseraft's configuration: the mode's scenario (built-in, inline or file) and the kit's environment.
import { CHILD_ENV } from '../child-env.js';
import { isJsonObject, loadScenarioObject, scenarioLabel } from '../process/scenario-source.js';
import { FUSERAFT_BUILTIN_SCENARIOS } from './builtins.js';
import { isFuseraftBuiltinScenarioName } from './scenario.js';
import type { FuseraftMode, FuseraftScenario } from './scenario.js';
import type { SessionConfig } from './session.js';

/** A scenario that cannot be loaded: the fake exits 2 with the reason. */
export class FuseraftScenarioError extends Error {}

const REPL_STEPS = ['token', 'thinking', 'tool', 'retrying', 'question', 'pause', 'approval', 'raw', 'grandchildren', 'hog', 'crash'];
const BRIDGE_STEPS = ['agent', 'orchestrator', 'budgetWarning', 'pause', 'approval', 'raw', 'grandchildren', 'hog', 'crash'];

/** A structural check of a scenario from JSON, so a malformed one is refused with a reason, not a crash mid-run. */
function problems(scenario: Record<string, unknown>): string[] {
  const found: string[] = [];
  const checkSteps = (steps: unknown, where: string, kinds: string[]) => {
    if (steps === undefined) return;
    if (!Array.isArray(steps)) return found.push(`${where} must be an array`);
    steps.forEach((step, index) => {
      if (!isJsonObject(step) || !kinds.some((kind) => kind in step)) found.push(`${where}[${index}] must be an object with one of ${kinds.join(', ')}`);
    });
  };
  const turns = scenario['turns'];
  if (turns !== undefined) {
    if (!Array.isArray(turns)) found.push('turns must be an array');
    else turns.forEach((turn, index) => (isJsonObject(turn) ? checkSteps(turn['steps'], `turns[${index}].steps`, REPL_STEPS) : found.push(`turns[${index}] must be an object`)));
  }
  checkSteps(scenario['bridge'], 'bridge', BRIDGE_STEPS);
  return found;
}

export function loadFuseraftScenario(mode: FuseraftMode, reference: string): { scenario: FuseraftScenario; name: string } {
  if (isFuseraftBuiltinScenarioName(mode, reference)) {
    const scenarios: Record<string, FuseraftScenario> = FUSERAFT_BUILTIN_SCENARIOS[mode];
    return { scenario: scenarios[reference] as FuseraftScenario, name: reference };
  }
  const parsed = loadScenarioObject(reference, (message) => new FuseraftScenarioError(message));
  const found = problems(parsed);
  if (found.length > 0) throw new FuseraftScenarioError(`invalid scenario: ${found.join('; ')}`);
  return { scenario: parsed as FuseraftScenario, name: scenarioLabel(parsed) };
}

export function sessionConfigFrom(mode: FuseraftMode, scenarioArgument: string | undefined, argv: string[], env: NodeJS.ProcessEnv): SessionConfig {
  const reference = scenarioArgument ?? (env[CHILD_ENV.scenario] !== undefined ? 'env' : mode === 'repl' ? 'chat' : 'success');
  const { scenario, name } = loadFuseraftScenario(mode, reference);
  const config: SessionConfig = { scenario, scenarioName: name, mode, argv };
  const transcriptDir = env[CHILD_ENV.transcriptDir];
  if (transcriptDir !== undefined && transcriptDir !== '') config.transcriptDir = transcriptDir;
  const ownerPid = Number(env[CHILD_ENV.ownerPid]);
  if (Number.isInteger(ownerPid) && ownerPid > 0) config.ownerPid = ownerPid;
  return config;
}
