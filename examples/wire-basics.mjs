// examples/wire-basics.mjs: the pure protocol core: encode controls, check events, answer bad lines, mirror the state.
import { advance, createReceiver, createSender, decide, decode, encode, rejectionAck } from 'subvisor/wire';

// Parent side: stamp and encode controls (the writer appends '\n').
const controls = createSender('control', 'run-1');
const prompt = controls.next('prompt', { text: 'Summarise README.md' });
console.log(prompt.ok && prompt.line);
// {"v":1,"seq":1,"type":"prompt","run":"run-1","text":"Summarise README.md"}

// Parent side: check every event line; seq must increase.
const events = createReceiver('event');
for (const line of [
  '{"v":1,"seq":1,"type":"ready","run":"run-1"}',
  '{"v":1,"seq":2,"type":"control-ack","run":"run-1","ref":1,"status":"accepted"}',
  '{"v":1,"seq":2,"type":"turn-started","run":"run-1","turn":1}',
  '{"v":2,"seq":3,"type":"exit","run":"run-1","status":"done"}',
]) {
  const result = events.receive(line);
  console.log(result.ok ? `ok ${result.message.type}` : `${result.rejection.code} fatal=${result.rejection.fatal}`);
}
// ok ready
// ok control-ack
// out-of-order fatal=false
// version-mismatch fatal=true   (stop reading: the channel is unusable)

// Child side: answer a bad control line with the ack Fen's child sends.
const bad = decode('{"v":1,"seq":7,"type":"steer","run":"run-1"}', 'control');
if (!bad.ok) console.log(bad.rejection.code, rejectionAck(bad.rejection));
// invalid-payload { status: 'rejected', reason: 'invalid steer: text is required', ref: 7 }

// encode validates first and never throws.
const unencodable = encode({ v: 1, seq: 1, type: 'prompt', run: 'run-1', text: 1n }, 'control');
console.log(unencodable.ok ? unencodable.line : unencodable.rejection.code);
// invalid

// Mirror the run state from acknowledged controls and turn ends.
let state = advance('starting', 'started'); // 'ready'
state = decide(state, 'prompt').next; // 'running'
console.log(decide(state, 'prompt'));
// { status: 'rejected', next: 'running', reason: 'a turn is running; send steer or follow-up' }
state = decide(state, 'finalize').next; // 'finalizing'
state = advance(state, 'turn-done'); // the interrupted turn ends: still 'finalizing'
state = advance(state, 'final-turn-done');
console.log(state);
// done
