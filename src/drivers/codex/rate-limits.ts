// Codex's rate-limit news as subvisor's one shape: an `error` notification that is a refusal (a 429, a 529, a usage limit), and `account/rateLimits/updated`'s windows.
import type { RateLimitFields } from '../../protocol/index.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { isObject } from '../shared/json-kinds.js';

/** The longest `message` a rate-limit event carries. */
const MESSAGE_CHARS = 300;

/** `codexErrorInfo` values that are a provider refusing work now, whatever the HTTP status (0.169.0's `CodexErrorInfo`). */
const REFUSALS = new Set(['usageLimitExceeded', 'rateLimitExceeded', 'serverOverloaded']);

/** The HTTP statuses that mean "not now": too many requests, overloaded. */
const LIMIT_STATUSES = new Set([429, 529]);

/**
 * The rate-limit news of an `error` notification (`{error: {message, codexErrorInfo, additionalDetails}, willRetry}`),
 * or undefined when it is another error. `codexErrorInfo` is a string (`usageLimitExceeded`) or an object with one
 * member whose value may carry `httpStatusCode` (0.169.0 reports a scripted 429 as
 * `{"responseStreamDisconnected": {"httpStatusCode": 429}}` with the message `Reconnecting... 1/5`).
 */
export function errorRateLimit(params: JsonObject): RateLimitFields | undefined {
  const error = params['error'];
  if (!isObject(error)) return undefined;
  const info = error['codexErrorInfo'];
  const status = httpStatusOf(info);
  const named = typeof info === 'string' ? info : undefined;
  if (!(named !== undefined && REFUSALS.has(named)) && !(status !== undefined && LIMIT_STATUSES.has(status))) return undefined;
  const fields: RateLimitFields = { status: 'limited', nativeType: 'error' };
  if (status !== undefined) fields.httpStatus = status;
  if (typeof params['willRetry'] === 'boolean') fields.agentRetries = params['willRetry'];
  const message = typeof error['message'] === 'string' ? error['message'] : undefined;
  // "Reconnecting... 2/5": the retry Codex is about to make, out of how many.
  const attempt = message === undefined ? null : /Reconnecting\.\.\. (\d+)\/(\d+)/.exec(message);
  if (attempt !== null) {
    fields.attempt = Number(attempt[1]);
    fields.maxAttempts = Number(attempt[2]);
  }
  if (named !== undefined) fields.limitType = named;
  const text = [message, typeof error['additionalDetails'] === 'string' ? error['additionalDetails'] : undefined].filter((part) => part !== undefined && part !== '').join(': ');
  if (text !== '') fields.message = text.slice(0, MESSAGE_CHARS);
  return fields;
}

/**
 * The rate-limit news of `account/rateLimits/updated {rateLimits: {primary, secondary, rateLimitReachedType}}`: the
 * fullest window decides (`usedPercent` >= 100 limited, >= 90 warning, else allowed), with its reset time; a
 * `rateLimitReachedType` is a refusal whatever the figures. Undefined when the update carries no window and no
 * refusal (0.169.0 sends one after every response, all null for a provider without limits).
 */
export function accountRateLimit(params: JsonObject): RateLimitFields | undefined {
  const limits = params['rateLimits'];
  if (!isObject(limits)) return undefined;
  let fullest: { name: string; usedPercent: number; resetsAt: number | undefined } | undefined;
  for (const name of ['primary', 'secondary']) {
    const window = limits[name];
    if (!isObject(window) || typeof window['usedPercent'] !== 'number' || !Number.isFinite(window['usedPercent'])) continue;
    if (fullest !== undefined && fullest.usedPercent >= window['usedPercent']) continue;
    fullest = { name, usedPercent: window['usedPercent'], resetsAt: epochMs(window['resetsAt']) };
  }
  const reached = typeof limits['rateLimitReachedType'] === 'string' ? limits['rateLimitReachedType'] : undefined;
  if (fullest === undefined && reached === undefined) return undefined;
  const used = fullest?.usedPercent ?? 100;
  const status = reached !== undefined || used >= 100 ? 'limited' : used >= 90 ? 'warning' : 'allowed';
  const fields: RateLimitFields = { status, nativeType: 'account/rateLimits/updated' };
  if (fullest?.resetsAt !== undefined) fields.resetsAt = fullest.resetsAt;
  const limitType = reached ?? fullest?.name;
  if (limitType !== undefined) fields.limitType = limitType;
  if (fullest !== undefined) fields.message = `${fullest.name} window ${Math.round(fullest.usedPercent)}% used`;
  return fields;
}

function httpStatusOf(info: JsonValue | undefined): number | undefined {
  if (!isObject(info)) return undefined;
  for (const key of Object.keys(info)) {
    const detail = info[key];
    const status = isObject(detail) ? detail['httpStatusCode'] : undefined;
    if (typeof status === 'number' && Number.isSafeInteger(status)) return status;
  }
  return undefined;
}

/** Codex's epoch seconds as epoch milliseconds. */
function epochMs(value: JsonValue | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value * 1000 : undefined;
}
