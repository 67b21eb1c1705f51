// Reads what a few mew messages signal: the wire revision of a pong, a turn's end in alerts and activity changes.
import { MEW_MIN_PROTOCOL_VERSION, snakeTag } from './messages.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { MewMessage } from './messages.js';

/** Why a `pong` is refused (a wire revision below 3, or none), or undefined when it is fine. */
export function versionProblem(pong: MewMessage): string | undefined {
  const revision = pong['protocol_version'];
  if (typeof revision === 'number' && Number.isSafeInteger(revision) && revision >= MEW_MIN_PROTOCOL_VERSION) return undefined;
  const version = stringField(pong, 'version');
  const said = typeof revision === 'number' ? `speaks wire revision ${revision}` : 'did not say its wire revision (pong.protocol_version)';
  return `the mew daemon${version === undefined ? '' : ` ${JSON.stringify(version)}`} ${said}; subvisor needs revision ${MEW_MIN_PROTOCOL_VERSION} or later (acknowledged submit_prompt with receipts): upgrade mew`;
}

/**
 * The alert of a `session_alert` in snake_case (`turn_complete`, `turn_failed`...). The seed names the
 * alerts but not the field: `alert`, `kind` or `event` are read, as a string or a tagged object.
 */
export function alertOf(message: MewMessage): string | undefined {
  for (const name of ['alert', 'kind', 'event']) {
    const value = message[name];
    const tag = snakeTag(isObject(value) ? (value['type'] ?? value['kind']) : value);
    if (tag !== undefined) return tag;
  }
  return undefined;
}

/**
 * Whether a `session_activity_changed` says the session went idle: `idle: true`, `active: false`,
 * `busy: false`, or an `activity` / `state` / `status` of `idle` (either spelling).
 */
export function isIdle(message: MewMessage): boolean {
  if (message['idle'] === true || message['active'] === false || message['busy'] === false) return true;
  return ['activity', 'state', 'status'].some((name) => snakeTag(message[name]) === 'idle');
}
