// Checks of fakeModel()'s options and of each scripted turn (a misspelt key is refused with the name meant, never
// ignored), and the resolution of a turn against its request: pieces cut, the shell tool named, usage counted.
import { closestName } from '../../text/closest-name.js';
import { isObject, shellCall } from './conversation.js';
import type { ReadRequest, TurnPlan } from './dialect.js';
import type { FakeModelOptions, ModelError, ModelTurn } from './types.js';

const OPTION_KEYS = Object.keys({ turns: true, delayMs: true, chunkChars: true, maxBodyBytes: true } satisfies Record<keyof FakeModelOptions, true>);
const TURN_KEYS = Object.keys({
  thinking: true,
  text: true,
  shell: true,
  toolCall: true,
  error: true,
  hang: true,
  cut: true,
  delayMs: true,
  chunkChars: true,
  usage: true,
  times: true,
} satisfies Record<keyof ModelTurn, true>);
const ERROR_KEYS = Object.keys({ status: true, message: true, retryAfterSeconds: true, headers: true, inStream: true } satisfies Record<keyof ModelError, true>);

function refuseUnknown(value: Record<string, unknown>, known: readonly string[], where: string, owner: string): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new TypeError(`${where}.${key} is not ${owner}; did you mean ${closestName(key, known)}?`);
  }
}

function checkCount(value: unknown, where: string, min: number): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < min)) {
    throw new TypeError(`${where} must be an integer >= ${min}`);
  }
}

const isTexts = (value: unknown): boolean =>
  typeof value === 'string' || (Array.isArray(value) && value.every((piece) => typeof piece === 'string'));

/** The options with their defaults, or a TypeError naming the first wrong one. */
export function checkOptions(options: FakeModelOptions): Required<Omit<FakeModelOptions, 'turns'>> & Pick<FakeModelOptions, 'turns'> {
  if (!isObject(options)) throw new TypeError('fakeModel(options): options must be an object with `turns`');
  refuseUnknown(options, OPTION_KEYS, 'options', 'an option of fakeModel');
  const { turns } = options;
  if (typeof turns !== 'function') {
    if (!Array.isArray(turns)) throw new TypeError('options.turns must be an array of turns (or functions of the request) or a function of the request');
    turns.forEach((turn, index) => {
      if (typeof turn !== 'function') checkTurn(turn, `options.turns[${index}]`);
    });
  }
  checkCount(options.delayMs, 'options.delayMs', 0);
  checkCount(options.chunkChars, 'options.chunkChars', 1);
  checkCount(options.maxBodyBytes, 'options.maxBodyBytes', 1);
  return { turns, delayMs: options.delayMs ?? 0, chunkChars: options.chunkChars ?? 16, maxBodyBytes: options.maxBodyBytes ?? 64 * 1024 * 1024 };
}

/** Throws a TypeError naming what is wrong with a scripted turn. */
export function checkTurn(turn: unknown, where: string): asserts turn is ModelTurn {
  if (!isObject(turn)) throw new TypeError(`${where} must be a turn object`);
  refuseUnknown(turn, TURN_KEYS, where, 'a field of a turn');
  for (const key of ['text', 'thinking'] as const) {
    if (turn[key] !== undefined && !isTexts(turn[key])) throw new TypeError(`${where}.${key} must be a string or an array of strings`);
  }
  if (turn['shell'] !== undefined && (typeof turn['shell'] !== 'string' || turn['shell'] === '')) throw new TypeError(`${where}.shell must be a command (a non-empty string)`);
  const call = turn['toolCall'];
  if (call !== undefined && !(isObject(call) && typeof call['name'] === 'string' && isObject(call['input']))) {
    throw new TypeError(`${where}.toolCall must be { name: string, input: object }`);
  }
  for (const key of ['hang', 'cut'] as const) {
    if (turn[key] !== undefined && typeof turn[key] !== 'boolean') throw new TypeError(`${where}.${key} must be a boolean`);
  }
  if (turn['hang'] === true && turn['cut'] === true) throw new TypeError(`${where} cannot both hang and cut`);
  checkCount(turn['delayMs'], `${where}.delayMs`, 0);
  if (turn['times'] !== Infinity) checkCount(turn['times'], `${where}.times`, 1);
  checkCount(turn['chunkChars'], `${where}.chunkChars`, 1);
  const usage = turn['usage'];
  if (usage !== undefined) {
    if (!isObject(usage)) throw new TypeError(`${where}.usage must be { inputTokens?, outputTokens? }`);
    refuseUnknown(usage, ['inputTokens', 'outputTokens'], `${where}.usage`, 'a usage count');
    checkCount(usage['inputTokens'], `${where}.usage.inputTokens`, 0);
    checkCount(usage['outputTokens'], `${where}.usage.outputTokens`, 0);
  }
  const error = turn['error'];
  if (error === undefined) return;
  if (!isObject(error)) throw new TypeError(`${where}.error must be { status, message?, retryAfterSeconds?, headers?, inStream? }`);
  refuseUnknown(error, ERROR_KEYS, `${where}.error`, 'a field of an error');
  const status = error['status'];
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) throw new TypeError(`${where}.error.status must be an HTTP error status (400-599)`);
  if (error['message'] !== undefined && typeof error['message'] !== 'string') throw new TypeError(`${where}.error.message must be a string`);
  const retryAfter = error['retryAfterSeconds'];
  if (retryAfter !== undefined && (typeof retryAfter !== 'number' || !(retryAfter >= 0))) throw new TypeError(`${where}.error.retryAfterSeconds must be a number >= 0`);
  const headers = error['headers'];
  if (headers !== undefined && !(isObject(headers) && Object.values(headers).every((value) => typeof value === 'string'))) {
    throw new TypeError(`${where}.error.headers must be an object of strings`);
  }
  if (error['inStream'] !== undefined && typeof error['inStream'] !== 'boolean') throw new TypeError(`${where}.error.inStream must be a boolean`);
  if (error['inStream'] === true) {
    if (turn['hang'] === true || turn['cut'] === true) throw new TypeError(`${where}: an error in the stream ends it; it cannot also hang or cut`);
  } else if (['thinking', 'text', 'shell', 'toolCall', 'hang', 'cut'].some((key) => turn[key] !== undefined)) {
    throw new TypeError(`${where}: an HTTP error is answered instead of the turn, so it has no content, hang or cut (use error.inStream for an error after content)`);
  }
}

/** The message of a scripted error: its own, or one that names the status. */
export function errorMessage(error: ModelError): string {
  return error.message ?? `scripted error ${error.status}`;
}

/** Everything the dialect needs to answer `turn`, or why the turn cannot answer this request. */
export function planTurn(
  turn: ModelTurn,
  request: ReadRequest,
  defaults: { delayMs: number; chunkChars: number },
  ids: { answer: string; call: () => string },
  requestBytes: number,
): TurnPlan | string {
  const chunkChars = turn.chunkChars ?? defaults.chunkChars;
  const pieces = (value: string | readonly string[] | undefined): string[] => {
    if (value === undefined) return [];
    if (typeof value !== 'string') return [...value];
    const out: string[] = [];
    for (let at = 0; at < value.length; at += chunkChars) out.push(value.slice(at, at + chunkChars));
    return out;
  };
  const calls: TurnPlan['calls'] = [];
  if (turn.shell !== undefined) {
    const call = shellCall(turn.shell, request.tools);
    if (typeof call === 'string') return call;
    calls.push({ ...call, id: ids.call() });
  }
  if (turn.toolCall !== undefined) calls.push({ name: turn.toolCall.name, input: { ...turn.toolCall.input }, id: ids.call() });
  const thinking = pieces(turn.thinking);
  const text = pieces(turn.text);
  const answerChars = [...thinking, ...text, ...calls.map((call) => JSON.stringify(call.input))].join('').length;
  return {
    id: ids.answer,
    model: request.model ?? 'fake-model',
    thinking,
    text,
    calls,
    delayMs: turn.delayMs ?? defaults.delayMs,
    end: turn.hang === true ? 'hang' : turn.cut === true ? 'cut' : 'complete',
    ...(turn.error?.inStream === true ? { streamError: { status: turn.error.status, message: errorMessage(turn.error) } } : {}),
    usage: {
      // About four characters a token, as the real models count English.
      inputTokens: turn.usage?.inputTokens ?? Math.max(1, Math.ceil(requestBytes / 4)),
      outputTokens: turn.usage?.outputTokens ?? Math.max(1, Math.ceil(answerChars / 4)),
    },
  };
}
