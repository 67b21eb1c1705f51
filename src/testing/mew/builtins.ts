// The fake mew daemon's built-in scenarios: one per behaviour and misbehaviour a mew client must handle.
import type { MewDaemonScenario } from './scenario.js';

/** Built-in scenarios by name (`fakeMewDaemon('drop-mid-turn')`, `subvisor-fake-mew daemon --scenario chat`). */
export const MEW_BUILTIN_SCENARIOS = {
  /** One turn: thinking, a tool with progress, text in chunks. */
  chat: { name: 'chat', turns: [{ steps: [{ thinking: 'Reading the README first.' }, { tool: 'read_file', progress: 'README.md' }, { text: 'The README describes subvisor.', chunks: 3 }] }] },
  /** Two turns for two prompts (keepAlive, follow-ups): `first answer`, then `second answer`. */
  'two-turns': { name: 'two-turns', turns: [{ steps: [{ text: 'first answer' }, { pause: 200 }] }, { steps: [{ text: 'second answer' }] }] },
  /** A long turn (10 s of pause after some text): for cancel, terminate, timeouts. */
  slow: { name: 'slow', turns: [{ steps: [{ text: 'working...' }, { pause: 10_000 }, { text: 'finished' }] }] },
  /** A `permission_request` for `bash`, then text saying whether it ran. */
  permission: { name: 'permission', turns: [{ steps: [{ permission: 'bash', input: { command: 'ls' } }, { text: 'permission handled' }] }] },
  /** A `permission_request` another client settles after 100 ms (`request_resolved`). */
  'resolved-by-other': { name: 'resolved-by-other', turns: [{ steps: [{ permission: 'bash', input: { command: 'ls' }, resolvedByOther: 100 }, { text: 'resolved elsewhere' }] }] },
  /** An `ask_user_request` with one question; the turn's text is the answer (or `(no answer)`). */
  ask: { name: 'ask', turns: [{ steps: [{ ask: ['Which file?'] }] }] },
  /** The blocking requests of newer mew builds, in one turn: a workspace permission, a subagent's permission, a plan approval, a goal. */
  'newer-requests': {
    name: 'newer-requests',
    turns: [{ steps: [{ workspacePermission: '/etc/hosts' }, { subagentPermission: 'bash', input: { command: 'ls' } }, { planApproval: '# Plan\n1. Read the files.' }, { goal: 'Make the tests pass' }] }],
  },
  /** A request of a kind no client response is defined for (`hologram_request`), which nobody settles. */
  'unknown-request': { name: 'unknown-request', turns: [{ steps: [{ text: 'waiting...' }, { blockingRequest: 'hologram_request', fields: { call_id: 'call_1_1' } }, { text: 'never' }] }] },
  /** A subagent's start, status and end inside the turn. */
  subagent: { name: 'subagent', turns: [{ steps: [{ subagent: 'explorer' }, { text: 'delegated' }] }] },
  /** The turn fails: `error_event` and `session_alert {turn_failed}`. */
  'failed-turn': { name: 'failed-turn', turns: [{ steps: [{ text: 'partial' }], fail: 'the provider returned 500' }] },
  /** The submission is rejected (`prompt_receipt {rejected}`). */
  rejected: { name: 'rejected', turns: [{ rejected: 'the session is read-only' }] },
  /** The connection drops in the middle of a turn. */
  'drop-mid-turn': { name: 'drop-mid-turn', turns: [{ steps: [{ text: 'partial' }, { drop: true }] }] },
  /** Answers the first ping (the handshake) and no other, during a long turn. */
  'no-pong': { name: 'no-pong', pongs: 1, turns: [{ steps: [{ text: 'working...' }, { pause: 10_000 }] }] },
  /** An old daemon: wire revision 2. */
  'old-protocol': { name: 'old-protocol', protocolVersion: 2, version: '0.3.0' },
  /** A message that is not JSON in the middle of a turn. */
  malformed: { name: 'malformed', turns: [{ steps: [{ raw: '{this is not json' }, { text: 'still here' }] }] },
  /** A message of a type mew does not have, in the middle of a turn. */
  'unknown-type': { name: 'unknown-type', turns: [{ steps: [{ unknown: 'hologram_update', fields: { frames: 3 } }, { text: 'still here' }] }] },
  /** The first receipt is lost (the connection drops); read back later it says rejected. */
  'receipt-lost': { name: 'receipt-lost', loseReceipt: { submission: 1, status: 'rejected', message: 'the session was busy' } },
  /** The first submission never reached the daemon (the connection drops); read back it is unknown. */
  'receipt-unknown': { name: 'receipt-unknown', loseReceipt: { submission: 1, status: 'unknown' } },
  /** The first receipt is lost, but the daemon had accepted it: its turn ran while the client was away. */
  'receipt-accepted-unseen': { name: 'receipt-accepted-unseen', loseReceipt: { submission: 1, status: 'accepted' } },
  /** The `chat` turn with PascalCase tags, as in the seed's example. */
  'pascal-case': { name: 'pascal-case', wireCase: 'PascalCase', turns: [{ steps: [{ text: 'Pascal says hi.' }] }] },
} as const satisfies Record<string, MewDaemonScenario>;

export type MewBuiltinScenarioName = keyof typeof MEW_BUILTIN_SCENARIOS;

export function isMewBuiltinScenarioName(name: string): name is MewBuiltinScenarioName {
  return Object.hasOwn(MEW_BUILTIN_SCENARIOS, name);
}
