// The fake child's configuration: the scenario reference and the FEN_WIRE_* / SUBVISOR_FAKE_* environment.
import { BUILTIN_SCENARIOS } from '../builtins.js';
import { CHILD_ENV } from '../child-env.js';
import { FAKE_TOKEN_ENV } from '../liveness.js';
import { isBuiltinScenarioName } from '../scenario.js';
import type { Scenario } from '../scenario.js';
import { isJsonObject, loadScenarioObject, scenarioLabel } from '../process/scenario-source.js';
import { WIRE_CONTROL_TYPES } from '../../wire/index.js';

export const USAGE = `usage: subvisor-fake-child [scenario]
  scenario: a built-in name (${Object.keys(BUILTIN_SCENARIOS).join(', ')}),
            a path to a scenario JSON file, or "env" to read $${CHILD_ENV.scenario}.
  Default: "env" when $${CHILD_ENV.scenario} is set, else "demo".
environment (as for fen --presenter rpc):
  FEN_WIRE_CONTROL_PATH  control JSONL file (required; may be created later)
  FEN_WIRE_EVENT_PATH    event JSONL file (required)
  FEN_WIRE_RUN_ID        run id (default "run")
  FEN_WIRE_DEADLINE      Unix seconds; past it the run exits timed-out
  ${CHILD_ENV.turnTickMs} / ${CHILD_ENV.idleTickMs}  cadence in ms (default 30 / 300)`;

/** Bad arguments or environment: the message is followed by the usage text. */
export class UsageError extends Error {}

export interface ChildConfig {
  scenario: Scenario;
  scenarioName: string;
  controlPath: string;
  eventPath: string;
  runId: string;
  /** FEN_WIRE_DEADLINE in epoch milliseconds. */
  deadlineMs?: number;
  turnTickMs: number;
  idleTickMs: number;
  transcriptDir?: string;
  /** The pid of the process that made this fake child, when the kit started it. */
  ownerPid?: number;
}

function nonNegativeNumber(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const parsed = Number(value);
  return Number.isFinite(parsed) && parsed >= 0 ? parsed : undefined;
}

export function loadScenario(reference: string): { scenario: Scenario; name: string } {
  if (isBuiltinScenarioName(reference)) return { scenario: BUILTIN_SCENARIOS[reference], name: reference };
  const parsed = loadScenarioObject(reference, (message) => new UsageError(message));
  const problems = scenarioProblems(parsed);
  if (problems.length > 0) throw new UsageError(`invalid scenario: ${problems.join('; ')}`);
  const scenario = parsed as Scenario;
  return { scenario, name: scenarioLabel(scenario) };
}

const isObject = isJsonObject;
const STEP_KINDS = ['thinking', 'text', 'tool', 'pause', 'misbehave', 'error'];

/** A pause step's fields: a misspelt control type is refused here, not left to hold the pause until its cap. */
function pauseProblems(step: Record<string, unknown>, where: string): string[] {
  const problems: string[] = [];
  const { pause, untilControls, untilControl } = step;
  if (typeof pause !== 'number' || !(pause >= 0)) problems.push(`${where}.pause must be a number of ms`);
  if (untilControls !== undefined && !(Number.isInteger(untilControls) && (untilControls as number) >= 0)) {
    problems.push(`${where}.untilControls must be a whole number`);
  }
  if (untilControl !== undefined && !(WIRE_CONTROL_TYPES as readonly unknown[]).includes(untilControl)) {
    problems.push(`${where}.untilControl must be one of ${WIRE_CONTROL_TYPES.join(', ')}`);
  }
  return problems;
}

/** A structural check of a scenario from JSON, so a malformed one is refused with a reason, not a crash mid-run. */
function scenarioProblems(scenario: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const turnProblems = (turn: unknown, where: string) => {
    if (!isObject(turn)) return problems.push(`${where} must be an object`);
    if (turn['steps'] === undefined) return;
    if (!Array.isArray(turn['steps'])) return problems.push(`${where}.steps must be an array`);
    turn['steps'].forEach((step, index) => {
      if (!isObject(step) || !STEP_KINDS.some((kind) => kind in step)) {
        problems.push(`${where}.steps[${index}] must be an object with one of ${STEP_KINDS.join(', ')}`);
      } else if ('pause' in step) problems.push(...pauseProblems(step, `${where}.steps[${index}]`));
    });
  };
  if (scenario['turns'] !== undefined) {
    if (!Array.isArray(scenario['turns'])) problems.push('turns must be an array');
    else scenario['turns'].forEach((turn, index) => turnProblems(turn, `turns[${index}]`));
  }
  if (scenario['finalTurn'] !== undefined) turnProblems(scenario['finalTurn'], 'finalTurn');
  if (scenario['misbehaviours'] !== undefined) {
    if (!Array.isArray(scenario['misbehaviours'])) problems.push('misbehaviours must be an array');
    else {
      scenario['misbehaviours'].forEach((misbehaviour, index) => {
        if (!isObject(misbehaviour) || misbehaviour['at'] === undefined || misbehaviour['do'] === undefined) {
          problems.push(`misbehaviours[${index}] must be an object with "at" and "do"`);
        }
      });
    }
  }
  if (scenario['ignore'] !== undefined && !Array.isArray(scenario['ignore'])) problems.push('ignore must be an array');
  const replay = scenario['replay'];
  if (replay !== undefined && (!isObject(replay) || !Array.isArray(replay['steps']) || !Array.isArray(replay['controls']) || !isObject(replay['end']))) {
    problems.push('replay must be a replay script (steps, controls, end): make it with replayScriptOf');
  }
  return problems;
}

const KIT_VARIABLES: readonly string[] = [FAKE_TOKEN_ENV, ...Object.values(CHILD_ENV)];

/**
 * Copies the variables fakeChild() passed in its kit argument into this process's environment, where the rest
 * of the child (and its grandchildren) read them.
 */
export function applyKit(json: string): void {
  let kit: unknown;
  try {
    kit = JSON.parse(json);
  } catch (error) {
    throw new UsageError(`the kit argument is not JSON: ${(error as Error).message}`);
  }
  if (typeof kit !== 'object' || kit === null || Array.isArray(kit)) throw new UsageError('the kit argument must be a JSON object');
  for (const [key, value] of Object.entries(kit)) {
    if (!KIT_VARIABLES.includes(key) || typeof value !== 'string') throw new UsageError(`unknown kit variable ${JSON.stringify(key)}`);
    process.env[key] = value;
  }
}

/** Reads the configuration exactly as Fen's rpc child reads its environment, plus the kit's variables. */
export function configFrom(reference: string | undefined, env: NodeJS.ProcessEnv): ChildConfig {
  const { scenario, name } = loadScenario(reference ?? (env[CHILD_ENV.scenario] !== undefined ? 'env' : 'demo'));
  const controlPath = env['FEN_WIRE_CONTROL_PATH'];
  const eventPath = env['FEN_WIRE_EVENT_PATH'];
  if (controlPath === undefined || controlPath === '') throw new UsageError('FEN_WIRE_CONTROL_PATH is required');
  if (eventPath === undefined || eventPath === '') throw new UsageError('FEN_WIRE_EVENT_PATH is required');
  const config: ChildConfig = {
    scenario,
    scenarioName: name,
    controlPath,
    eventPath,
    runId: env['FEN_WIRE_RUN_ID'] || 'run',
    turnTickMs: nonNegativeNumber(env[CHILD_ENV.turnTickMs]) ?? scenario.turnTickMs ?? 30,
    idleTickMs: nonNegativeNumber(env[CHILD_ENV.idleTickMs]) ?? scenario.idleTickMs ?? 300,
  };
  const deadline = nonNegativeNumber(env['FEN_WIRE_DEADLINE']);
  if (deadline !== undefined) config.deadlineMs = deadline * 1000;
  const ownerPid = nonNegativeNumber(env[CHILD_ENV.ownerPid]);
  if (ownerPid !== undefined && Number.isInteger(ownerPid) && ownerPid > 0) config.ownerPid = ownerPid;
  const transcriptDir = env[CHILD_ENV.transcriptDir];
  if (transcriptDir !== undefined && transcriptDir !== '') config.transcriptDir = transcriptDir;
  return config;
}
