// A hostile Fen child for reliability tests: follows a JSON plan of raw wire steps (floods, withheld acks, file swaps, answer files).
// Usage: node hostile-fen-child.mjs '<plan json>'   (FEN_WIRE_EVENT_PATH / FEN_WIRE_CONTROL_PATH / FEN_WIRE_RUN_ID from the parent)
//
// Plan: { "steps": [ step, ... ] }, steps run in order:
//   { "ready": true }                      write `ready`
//   { "ack": "task" }                      ack control seq 1 (the task prompt) accepted, and start turn 1
//   { "flood": { "count": N, "bytes": B } } write N assistant-text-delta events of about B bytes each
//   { "ackControls": { "count": N } }      wait until N more control lines exist, ack each (accepted), in order
//   { "floodAcking": { "count": N, "bytes": B } } a flood that acks every new control line as it appears
//   { "answerFile": { "kind": K, ... } }   make the answer file (see makeAnswerFile) and write result naming it
//   { "replace": "rename" | "recreate" | "truncate" }   swap the event file (then keep writing to the new one)
//   { "sleep": ms }                         wait
//   { "touch": path }                       create an empty file at path (tells the test a step is done)
//   { "result": text }                      complete turn 1 and write `result` with that final text
//   { "exit": "done" }                      write `exit` (status) and leave with code 0
//   { "exitUnterminated": "done" }          the same, but the exit line has no newline
//   { "hang": true }                        wait for a cancel (exit cancelled) or close (ack it, exit done) line
import {
  chmodSync,
  closeSync,
  existsSync,
  ftruncateSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

const plan = JSON.parse(process.argv[2] ?? '{"steps":[]}');
const eventPath = process.env.FEN_WIRE_EVENT_PATH;
const controlPath = process.env.FEN_WIRE_CONTROL_PATH;
const run = process.env.FEN_WIRE_RUN_ID;
let fd = openSync(eventPath, 'a');
let seq = 0;
let controlsSeen = 1; // the task prompt is control seq 1

/** The inline text of a cut result: the answer file of the spec begins with it. */
const CUT_TEXT = 'the cut text';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function write(type, fields = {}) {
  seq++;
  writeSync(fd, `${JSON.stringify({ v: 1, seq, type, run, ...fields })}\n`);
}

/** Control lines the parent wrote so far. */
function controlCount() {
  try {
    return readFileSync(controlPath, 'utf8').split('\n').filter((line) => line !== '').length;
  } catch {
    return 0;
  }
}

function ackNewControls() {
  const count = controlCount();
  while (controlsSeen < count) {
    controlsSeen++;
    write('control-ack', { ref: controlsSeen, status: 'accepted' });
  }
}

/** Answer files a hostile child may name; returns the path to put in `final-text-path`. */
function makeAnswerFile(spec) {
  if (spec.kind === 'existing') return spec.target;
  // The child's own /proc file: owned by the parent's uid, one link, 0400, its inode made when first looked up.
  if (spec.kind === 'proc-own') return `/proc/${process.pid}/environ`;
  if (spec.kind === 'touched-now') {
    // An existing file of the parent's, its times moved to now: only its birth time tells.
    utimesSync(spec.target, new Date(), new Date());
    return spec.target;
  }
  // The test owns `dir` (and removes it): the child never leaves a temp file of its own behind.
  const path = join(spec.dir, spec.name ?? 'answer.txt');
  switch (spec.kind) {
    case 'own':
      writeFileSync(path, spec.text ?? `${CUT_TEXT}, and the rest of the whole answer`, { mode: 0o600 });
      return path;
    case 'big':
      writeFileSync(path, 'b'.repeat(spec.bytes), { mode: 0o600 });
      return path;
    case 'group-writable':
      writeFileSync(path, spec.text ?? 'shared', { mode: 0o600 });
      chmodSync(path, 0o620);
      return path;
    case 'hardlink':
      linkSync(spec.target, path);
      return path;
    case 'symlink':
      symlinkSync(spec.target, path);
      return path;
    case 'touched-old':
      writeFileSync(path, spec.text ?? 'old', { mode: 0o600 });
      utimesSync(path, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
      return path;
    default:
      throw new Error(`unknown answer file kind ${spec.kind}`);
  }
}

for (const step of plan.steps) {
  if (step.ready) write('ready');
  else if (step.ack === 'task') {
    write('control-ack', { ref: 1, status: 'accepted' });
    write('turn-started', { turn: 1 });
  } else if (step.flood || step.floodAcking) {
    const { count, bytes } = step.flood ?? step.floodAcking;
    const delta = 'x'.repeat(Math.max(0, bytes - 120));
    for (let i = 0; i < count; i++) {
      write('assistant-text-delta', { 'content-index': 0, delta });
      if (step.floodAcking && i % 64 === 0) ackNewControls();
    }
    if (step.floodAcking) ackNewControls();
  } else if (step.ackControls) {
    const want = controlsSeen + step.ackControls.count;
    while (controlCount() < want) await sleep(5);
    ackNewControls();
  } else if (step.answerFile) {
    const path = makeAnswerFile(step.answerFile);
    write('turn-complete', { turn: 1, 'stop-reason': 'stop' });
    write('result', { 'stop-reason': 'stop', 'final-text': CUT_TEXT, 'truncated?': true, 'final-text-path': path });
  } else if (step.replace) {
    closeSync(fd);
    if (step.replace === 'rename') {
      const other = join(dirname(eventPath), 'swap.tmp');
      writeFileSync(other, '', { mode: 0o600 });
      renameSync(other, eventPath);
      fd = openSync(eventPath, 'a');
    } else if (step.replace === 'recreate') {
      unlinkSync(eventPath);
      fd = openSync(eventPath, 'a', 0o600);
    } else {
      fd = openSync(eventPath, 'r+');
      ftruncateSync(fd, 0);
      closeSync(fd);
      fd = openSync(eventPath, 'a');
    }
  } else if (step.sleep) await sleep(step.sleep);
  else if (step.touch) writeFileSync(step.touch, '');
  else if (step.result !== undefined) {
    write('turn-complete', { turn: 1, 'stop-reason': 'stop' });
    write('result', { 'stop-reason': 'stop', 'final-text': step.result });
  }
  else if (step.exitUnterminated) {
    // The exit line without its newline, then leave.
    seq++;
    writeSync(fd, JSON.stringify({ v: 1, seq, type: 'exit', run, status: step.exitUnterminated }));
    closeSync(fd);
    process.exit(0);
  } else if (step.exit) {
    write('exit', { status: step.exit });
    closeSync(fd);
    process.exit(0);
  } else if (step.hang) {
    // Until the parent's cancel or kill ladder: a cancel line is answered by leaving cancelled.
    for (;;) {
      await sleep(20);
      const lines = existsSync(controlPath) ? readFileSync(controlPath, 'utf8') : '';
      if (lines.includes('"type":"cancel"')) {
        write('exit', { status: 'cancelled' });
        process.exit(0);
      }
      if (lines.includes('"type":"close"')) {
        const closeSeq = lines.split('\n').filter((line) => line.includes('"type":"close"')).map((line) => JSON.parse(line).seq)[0];
        write('control-ack', { ref: closeSeq, status: 'accepted' });
        write('exit', { status: 'done' });
        process.exit(0);
      }
    }
  }
}
