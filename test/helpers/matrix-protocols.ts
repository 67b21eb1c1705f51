// The hostile matrix's protocols: for each one, how its fake plays every scenario, and what the run must end with.
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { connectRun, spawnRun } from '../../src/index.js';
import type { ConnectOptions, OutcomeErrorCode, OutcomeStatus, Run, RunOptions } from '../../src/index.js';
import { fakeChild, fakeFa, fakeFuseraft, fakeFuseraftServe, fakeMewDaemon } from '../../src/testing/index.js';
import type { FaStep, FuseraftReplStep, FuseraftScenario, MewDaemonScenario, MewStep, Scenario, ServeScenario } from '../../src/testing/index.js';

/** The scenarios every protocol is run through. */
export const CELLS = [
  'honest',
  'crash-mid-frame',
  'hang-deadline',
  'hang-stall',
  'stubborn',
  'cancel',
  'never-ready',
  'garbage',
  'blocking-request',
  'other-session',
] as const;
export type Cell = (typeof CELLS)[number];

/** Why the other-session cell does not apply to a protocol with a process of its own. */
const ONE_CHILD_ONE_RUN = 'one child per run: nothing of another session reaches its channel (the cell is for daemons, which serve many clients)';

/** The marks the fakes put in the agent's reasoning and in a tool's input: neither may reach the answer. */
export const THINKING = 'PRIVATE-REASONING-7f3a';
export const TOOL_INPUT = 'TOOL-INPUT-9c1e';
export const ANSWER = 'The answer is 42.';

/**
 * Options every cell's run gets: short graces, so each cell ends within a few seconds; a ready timeout
 * generous enough for a fake child to start on a loaded machine (the never-ready cell gets a short one).
 */
export const COMMON = { killGraceMs: 300, readyTimeoutMs: 10_000, requestTimeoutMs: 600 } as const;
export const DEADLINE_MS = 500;
export const STALL_MS = 500;

/** A started cell: the run, and what of it must be gone afterwards. */
export interface Started {
  run: Run;
  /** Processes of the child's tree still alive (found by the fake's token: setsid grandchildren too); none for daemons. */
  livePids?: () => number[];
  /** Connections the fake daemon still holds open. */
  openConnections?: () => number;
  /** The headers of every WebSocket handshake the fake daemon received. */
  handshakes?: () => ReadonlyArray<Readonly<Record<string, string | string[] | undefined>>>;
  /** Called once the outcome is in (e.g. a cancel the cell sends mid-turn is sent by `afterStart`). */
  afterStart?: (run: Run) => void;
  /** Releases the fake (files, servers). */
  cleanup(): Promise<void> | void;
}

/** What a cell must end with (beside the invariants every cell asserts). */
export interface Expectation {
  status: OutcomeStatus;
  errorCode?: OutcomeErrorCode | undefined;
  /** The process tree had to be signalled, and escalated to SIGKILL. */
  killed?: boolean;
  escalated?: boolean;
  /** The answer, exactly. */
  finalText?: string;
}

export interface MatrixProtocol {
  name: string;
  /** The peer names its conversation (the outcome's `sessionId`); Fen's wire has no session id. */
  hasSession: boolean;
  /** Cells that do not apply to this protocol, each with the reason (asserted by the test, not skipped in silence). */
  notApplicable: Partial<Record<Cell, string>>;
  start(cell: Cell, stateDir: string): Promise<Started>;
  expect(cell: Cell): Expectation;
}

/** Options of a cell's run beyond COMMON. */
function cellOptions(cell: Cell): { timeoutMs?: number; stallTimeoutMs?: number; readyTimeoutMs?: number } {
  if (cell === 'hang-deadline') return { timeoutMs: DEADLINE_MS };
  if (cell === 'hang-stall') return { stallTimeoutMs: STALL_MS };
  if (cell === 'never-ready') return { readyTimeoutMs: 800 };
  return {};
}

/** A cell whose run the test cancels once a turn is under way. */
function cancelsMidTurn(run: Run): void {
  run.on('event', (event) => {
    if (event.type === 'turn-started') void run.cancel();
  });
}

/* Fen ------------------------------------------------------------------------------------------ */

const FEN_HONEST = { steps: [{ thinking: THINKING }, { tool: 'read', arguments: { path: TOOL_INPUT }, result: 'file text' }], answer: ANSWER, answerChunks: 3 };

function fenScenario(cell: Cell): Scenario {
  switch (cell) {
    case 'honest':
    case 'blocking-request':
    case 'other-session':
      return { turns: [FEN_HONEST] };
    case 'crash-mid-frame':
      return { turns: [{ steps: [{ text: 'partial' }, { misbehave: [{ raw: [{ kind: 'literal', line: '{"v":1,"seq":99,"type":"assistant-te', newline: false }] }, { crash: { code: 1 } }] }] }] };
    case 'hang-deadline':
    case 'cancel':
      return { turns: [{ steps: [{ text: 'working' }, { pause: 60_000 }] }] };
    case 'hang-stall':
      return { turns: [{ steps: [{ text: 'working' }, { misbehave: 'hang' }] }] };
    case 'stubborn':
      return {
        turns: [{ steps: [{ misbehave: { grandchildren: { session: true } } }], answer: ANSWER }],
        ignore: ['close', 'sigterm'],
      };
    case 'never-ready':
      return { readyDelayMs: 60_000 };
    case 'garbage':
      return {
        turns: [{ ...FEN_HONEST, steps: [{ misbehave: { raw: [{ kind: 'garbage' }, { kind: 'unknown-type' }, { kind: 'invalid-payload' }] } }, ...FEN_HONEST.steps] }],
      };
  }
}

export const FEN: MatrixProtocol = {
  name: 'fen',
  hasSession: false,
  notApplicable: {
    'blocking-request': "Fen's wire protocol has no request a parent must answer: the child never waits on its parent mid-turn (the honest run stands in)",
    'other-session': ONE_CHILD_ONE_RUN,
  },
  async start(cell, stateDir) {
    const fake = fakeChild(fenScenario(cell), { turnTickMs: 5, idleTickMs: 20 });
    const run = spawnRun({ ...fake, task: 'go', stateDir, ...COMMON, ...cellOptions(cell) });
    if (cell === 'cancel') cancelsMidTurn(run);
    return { run, livePids: () => fake.livePids(), cleanup: () => fake.cleanup() };
  },
  expect(cell) {
    return processExpectation(cell, { crashCode: 'no-exit-event', stubborn: { status: 'failed', errorCode: 'no-exit-event' } });
  },
};

/** What a protocol with a process ends with in each cell; `stubborn` is the protocol's own. */
function processExpectation(cell: Cell, own: { crashCode: OutcomeErrorCode; stubborn: Expectation }): Expectation {
  switch (cell) {
    case 'honest':
    case 'garbage':
    case 'blocking-request':
    case 'other-session':
      return { status: 'done', finalText: ANSWER };
    case 'crash-mid-frame':
      return { status: 'failed', errorCode: own.crashCode };
    case 'hang-deadline':
      return { status: 'timed-out' };
    case 'hang-stall':
      return { status: 'cancelled', errorCode: 'stalled' };
    case 'stubborn':
      return { ...own.stubborn, killed: true, escalated: true };
    case 'cancel':
      return { status: 'cancelled', errorCode: 'aborted' };
    case 'never-ready':
      return { status: 'failed', errorCode: 'ready-timeout', killed: true };
  }
}

/* HEP ------------------------------------------------------------------------------------------ */

const HEP_HONEST: FaStep[] = [{ tool: 'read', args: { path: TOOL_INPUT }, result: 'file text' }, { text: ANSWER, chunks: 3 }];

export const HEP: MatrixProtocol = {
  hasSession: true,
  name: 'hep',
  notApplicable: {
    'blocking-request': 'HEP v1 is one prompt per process with stdin closed: fa never asks its parent anything (the honest run stands in)',
    'other-session': ONE_CHILD_ONE_RUN,
  },
  async start(cell, stateDir) {
    const rounds = {
      honest: [{ steps: HEP_HONEST }],
      'blocking-request': [{ steps: HEP_HONEST }],
      'other-session': [{ steps: HEP_HONEST }],
      'crash-mid-frame': [{ steps: [{ text: 'partial' }, { dieMidFrame: {} }] }],
      'hang-deadline': [{ steps: [{ text: 'working' }, { pause: 60_000 }] }],
      cancel: [{ steps: [{ text: 'working' }, { pause: 60_000 }] }],
      'hang-stall': [{ steps: [{ text: 'working' }, { pause: 60_000 }] }],
      // HEP has no close: its stubborn child ignores the cancel's SIGINT and the ladder's SIGTERM.
      stubborn: [{ steps: [{ grandchildren: { session: true } }, { text: 'working' }, { pause: 60_000 }] }],
      'never-ready': [],
      garbage: [{ steps: [{ raw: [{ kind: 'garbage' }, { kind: 'unknown-frame' }, { kind: 'not-object' }] }, ...HEP_HONEST] }],
    } satisfies Record<Cell, Array<{ steps: FaStep[] }>>;
    // A child that never writes its header: a pause before anything (the header is written before the rounds, so use prose-free silence).
    const fake = cell === 'never-ready' ? undefined : fakeFa({ rounds: rounds[cell], ignoreSignals: cell === 'stubborn' });
    if (fake === undefined) return silentProcess(stateDir);
    const run = spawnRun({ ...fake, protocol: 'hep', task: 'go', stateDir, ...COMMON, ...cellOptions(cell) });
    if (cell === 'cancel' || cell === 'stubborn') cancelsMidTurn(run);
    return { run, livePids: () => fake.livePids(), cleanup: () => fake.cleanup() };
  },
  expect(cell) {
    if (cell === 'stubborn') return { status: 'cancelled', errorCode: 'aborted', killed: true, escalated: true };
    return processExpectation(cell, { crashCode: 'no-exit-event', stubborn: { status: 'cancelled' } });
  },
};

/** A child that never speaks: `node -e` sleeping, for the never-ready cell of protocols whose fake always greets. */
function silentProcess(stateDir: string, protocol = 'hep'): Started {
  const run = spawnRun({
    protocol: protocol as RunOptions['protocol'],
    command: process.execPath,
    // `--`: what the driver appends (HEP's `-p <task>`, fuseraft's subcommand) is the script's, not node's.
    args: ['-e', 'setTimeout(() => {}, 60000)', '--'],
    task: 'go',
    stateDir,
    ...COMMON,
    ...cellOptions('never-ready'),
  } as RunOptions);
  return { run, cleanup: () => undefined };
}

/* fuseraft (repl and bridge) -------------------------------------------------------------------- */

const REPL_HONEST: FuseraftReplStep[] = [
  { thinking: THINKING, chunks: 2 },
  { tool: 'read_file', args: { path: TOOL_INPUT }, summary: `path=${TOOL_INPUT}`, output: 'file text' },
  { token: ANSWER, chunks: 3 },
];

function replScenario(cell: Cell): FuseraftScenario {
  switch (cell) {
    case 'honest':
    case 'other-session':
      return { turns: [{ steps: REPL_HONEST }] };
    case 'blocking-request':
      // Nobody answers (no approve callback): the driver denies it, and the turn goes on.
      return { turns: [{ steps: [{ approval: { kind: 'shell_command', command: `rm -rf ${TOOL_INPUT}` } }, ...REPL_HONEST] }] };
    case 'crash-mid-frame':
      return { turns: [{ steps: [{ token: 'partial' }, { raw: [{ kind: 'literal', line: '{"type":"tok', newline: false }] }, { crash: { code: 1 } }] }] };
    case 'hang-deadline':
    case 'hang-stall':
    case 'cancel':
      return { turns: [{ steps: [{ token: 'working' }, { pause: 60_000 }] }] };
    case 'stubborn':
      return { turns: [{ steps: [{ grandchildren: { session: true } }, { token: ANSWER }] }], ignoreSignals: true, ignoreStdinEnd: true };
    case 'never-ready':
      return {};
    case 'garbage':
      return { turns: [{ steps: [{ raw: [{ kind: 'noise' }, { kind: 'unknown-event' }, { kind: 'literal', line: '[1,2,3]' }] }, ...REPL_HONEST] }] };
  }
}

export const FUSERAFT: MatrixProtocol = {
  hasSession: true,
  name: 'fuseraft',
  notApplicable: { 'other-session': ONE_CHILD_ONE_RUN },
  async start(cell, stateDir) {
    if (cell === 'never-ready') return silentProcess(stateDir, 'fuseraft');
    const fake = fakeFuseraft('repl', replScenario(cell));
    const run = spawnRun({ ...fake, protocol: 'fuseraft', task: 'go', stateDir, ...COMMON, ...cellOptions(cell) });
    if (cell === 'cancel') cancelsMidTurn(run);
    return { run, livePids: () => fake.livePids(), cleanup: () => fake.cleanup() };
  },
  expect(cell) {
    // The stubborn repl answered, then never said session_end: like a Fen child that never wrote its exit.
    return processExpectation(cell, { crashCode: 'no-exit-event', stubborn: { status: 'failed', errorCode: 'no-exit-event' } });
  },
};

function bridgeScenario(cell: Cell): FuseraftScenario {
  const honest = [{ agent: 'Coder', message: ANSWER, tools: [{ name: 'read_file', argsSummary: `path=${TOOL_INPUT}` }] }];
  switch (cell) {
    case 'honest':
    case 'other-session':
      return { bridge: honest };
    case 'blocking-request':
      return { bridge: [{ approval: { kind: 'shell_command', command: `rm -rf ${TOOL_INPUT}` } }, ...honest] };
    case 'crash-mid-frame':
      return { bridge: [{ raw: [{ kind: 'literal', line: '{"type":"agent_mess', newline: false }] }, { crash: { code: 1 } }] };
    case 'hang-deadline':
    case 'hang-stall':
    case 'cancel':
      return { bridge: [{ agent: 'Coder', message: 'working' }, { pause: 60_000 }] };
    case 'stubborn':
      return { bridge: [{ grandchildren: { session: true } }, { agent: 'Coder', message: 'working' }, { pause: 60_000 }], ignoreSignals: true };
    case 'never-ready':
      return {};
    case 'garbage':
      return { bridge: [{ raw: [{ kind: 'noise' }, { kind: 'unknown-event' }] }, ...honest] };
  }
}

export const FUSERAFT_BRIDGE: MatrixProtocol = {
  hasSession: true,
  name: 'fuseraft-bridge',
  notApplicable: { 'other-session': ONE_CHILD_ONE_RUN },
  async start(cell, stateDir) {
    if (cell === 'never-ready') return silentProcess(stateDir, 'fuseraft-bridge');
    const fake = fakeFuseraft('bridge', bridgeScenario(cell));
    const run = spawnRun({ ...fake, protocol: 'fuseraft-bridge', task: 'go', stateDir, ...COMMON, ...cellOptions(cell) });
    // The bridge reads no close: its stubborn session is one that ignores the cancel's interrupt and SIGTERM.
    if (cell === 'cancel' || cell === 'stubborn') cancelsMidTurn(run);
    return { run, livePids: () => fake.livePids(), cleanup: () => fake.cleanup() };
  },
  expect(cell) {
    if (cell === 'stubborn') return { status: 'cancelled', errorCode: 'aborted', killed: true, escalated: true };
    return processExpectation(cell, { crashCode: 'no-exit-event', stubborn: { status: 'cancelled' } });
  },
};

/* Daemons ---------------------------------------------------------------------------------------- */

/** A TCP server that accepts connections and never answers the WebSocket upgrade. */
async function mute(): Promise<FakeDaemon> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/attach`,
    open: () => sockets.size,
    handshakes: () => [],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** What a daemon run ends with in each cell (no process: nothing is killed). */
function daemonExpectation(cell: Cell, own: Partial<Record<Cell, Expectation>>): Expectation {
  const common: Record<Cell, Expectation> = {
    honest: { status: 'done', finalText: ANSWER },
    garbage: { status: 'done', finalText: ANSWER },
    'blocking-request': { status: 'done', finalText: ANSWER },
    'other-session': { status: 'done', finalText: ANSWER },
    'crash-mid-frame': { status: 'failed', errorCode: 'connection-lost' },
    'hang-deadline': { status: 'timed-out', errorCode: 'deadline' },
    'hang-stall': { status: 'cancelled', errorCode: 'stalled' },
    stubborn: { status: 'cancelled', errorCode: 'aborted' },
    cancel: { status: 'cancelled', errorCode: 'aborted' },
    'never-ready': { status: 'failed', errorCode: 'ready-timeout' },
  };
  return { ...(own[cell] ?? common[cell]), killed: false, escalated: false };
}

function serveScenario(cell: Cell): ServeScenario {
  const honest = {
    progress: [{ type: 'tool_calling', agent: 'Coder', tool: 'read_file', argsSummary: `path=${TOOL_INPUT}` }],
    answer: ANSWER,
  };
  switch (cell) {
    case 'honest':
      return { tasks: [honest] };
    case 'blocking-request':
      // Nobody answers (no approve callback): the driver denies it, so the task fails as the daemon says.
      return { tasks: [{ ...honest, approvals: [{ kind: 'shell_command', command: `rm -rf ${TOOL_INPUT}` }] }] };
    case 'crash-mid-frame':
      return { tasks: [{ hang: true }], misbehave: ['drop-mid-turn'] };
    case 'hang-deadline':
    case 'hang-stall':
    case 'cancel':
      return { tasks: [{ hang: true }] };
    case 'stubborn':
      return { tasks: [{ hang: true }], misbehave: ['ignore-interrupt'] };
    case 'never-ready':
      return {};
    case 'garbage':
      return { tasks: [honest], misbehave: ['malformed', 'unknown-type'] };
    case 'other-session':
      // The daemon's results and queued notes carry the task's sessionId: another client's must end nothing of this run.
      return { tasks: [honest], misbehave: ['other-task'] };
  }
}

/** A daemon the matrix plays: where it listens, the connections it holds, how it is closed. */
interface FakeDaemon {
  url: string;
  open(): number;
  handshakes(): ReadonlyArray<Readonly<Record<string, string | string[] | undefined>>>;
  close(): Promise<void>;
}

/** A daemon protocol's cells: `never-ready` against a server that never answers the upgrade, the rest against its fake. */
function daemonProtocol(
  name: 'fuseraft-serve' | 'mew',
  fake: (cell: Cell) => Promise<FakeDaemon>,
  own: Partial<Record<Cell, Expectation>>,
): MatrixProtocol {
  return {
    name,
    hasSession: true,
    notApplicable: {},
    async start(cell) {
      const daemon = cell === 'never-ready' ? await mute() : await fake(cell);
      const options = { ...COMMON, ...cellOptions(cell), reconnectGraceMs: 0 } satisfies Partial<ConnectOptions>;
      const run = connectRun({ protocol: name, url: daemon.url, task: 'go', ...options });
      if (cell === 'cancel' || cell === 'stubborn') cancelsMidTurn(run);
      return { run, openConnections: () => daemon.open(), handshakes: () => daemon.handshakes(), cleanup: () => daemon.close() };
    },
    expect: (cell) => daemonExpectation(cell, own),
  };
}

export const FUSERAFT_SERVE = daemonProtocol(
  'fuseraft-serve',
  async (cell) => {
    const daemon = await fakeFuseraftServe(serveScenario(cell));
    return { url: daemon.url!, open: () => daemon.connections, handshakes: () => daemon.handshakes, close: () => daemon.close() };
  },
  // fuseraft serve reports an approval denied by default as the task's failure.
  { 'blocking-request': { status: 'failed', errorCode: 'child-error' } },
);

const MEW_HONEST: MewStep[] = [{ thinking: THINKING }, { tool: 'read', progress: TOOL_INPUT }, { text: ANSWER, chunks: 3 }];

function mewScenario(cell: Cell): MewDaemonScenario {
  switch (cell) {
    case 'honest':
      return { turns: [{ steps: MEW_HONEST }] };
    case 'blocking-request':
      // An older build's integer request id, denied by default (no approve callback); then a request kind no
      // client can answer, which nobody settles: the core's bound ends the run.
      return {
        requestIds: 'integer',
        turns: [{ steps: [{ permission: 'bash', input: { command: TOOL_INPUT } }, { blockingRequest: 'hologram_request', fields: { call_id: 'c1' } }, ...MEW_HONEST] }],
      };
    case 'crash-mid-frame':
      return { turns: [{ steps: [{ text: 'partial' }, { drop: true }] }] };
    case 'hang-deadline':
    case 'hang-stall':
    case 'cancel':
      return { turns: [{ steps: [{ text: 'working' }, { pause: 60_000 }] }] };
    case 'stubborn':
      return { turns: [{ steps: [{ text: 'working' }, { pause: 60_000 }] }], ignoreCancel: true };
    case 'never-ready':
      return {};
    case 'garbage':
      return { turns: [{ steps: [{ raw: 'this is { not JSON' }, { unknown: 'mystery_event', fields: { level: 3 } }, ...MEW_HONEST] }] };
    case 'other-session':
      // mew broadcasts every session's notices: another session's going idle, its usage and its alerts, mid-turn.
      return { turns: [{ steps: [{ text: 'The answer is 42' }, { otherSession: 'idle' }, { otherSession: 'usage' }, { otherSession: 'turn_complete' }, { otherSession: 'turn_failed' }, { text: '.' }] }] };
  }
}

export const MEW = daemonProtocol(
  'mew',
  async (cell) => {
    const daemon = await fakeMewDaemon(mewScenario(cell));
    return { url: daemon.url, open: () => daemon.openConnections(), handshakes: () => daemon.handshakes, close: () => daemon.close() };
  },
  { 'blocking-request': { status: 'failed', errorCode: 'request-unanswered' } },
);

export const PROTOCOLS: MatrixProtocol[] = [FEN, HEP, FUSERAFT, FUSERAFT_BRIDGE, FUSERAFT_SERVE, MEW];
