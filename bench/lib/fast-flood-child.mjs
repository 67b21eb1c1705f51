// A Fen child that writes a flood faster than any reader: lines built before `ready`, appended ~1 MB per write.
// Usage: node fast-flood-child.mjs COUNT BYTES. It acks the task's prompt (control seq 1) without reading the
// control file, and reports how long its writes took in an `info` event's `flood-write-ns` after the flood.
import { closeSync, openSync, writeSync } from 'node:fs';
import { fastFloodBatches } from './fast-flood-lines.mjs';

const [count, bytes] = process.argv.slice(2).map(Number);
const runId = process.env.FEN_WIRE_RUN_ID;
const fd = openSync(process.env.FEN_WIRE_EVENT_PATH, 'a');
let seq = 0;
const write = (type, fields = {}) => writeSync(fd, `${JSON.stringify({ v: 1, seq: ++seq, type, run: runId, ...fields })}\n`);
// ready, the ack and turn-started take seq 1 to 3: the flood follows from 4.
const batches = fastFloodBatches({ runId, firstSeq: 4, count, bytes });
write('ready');
write('control-ack', { ref: 1, status: 'accepted' });
write('turn-started', { turn: 1 });
const started = process.hrtime.bigint();
for (const batch of batches) writeSync(fd, batch);
const writeNs = process.hrtime.bigint() - started;
seq += count;
write('info', { 'flood-write-ns': writeNs.toString() });
write('turn-complete', { turn: 1, 'stop-reason': 'end_turn' });
write('result', { 'stop-reason': 'end_turn', 'final-text': 'Flood written.' });
write('exit', { status: 'done' });
closeSync(fd);
