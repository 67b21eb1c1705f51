// fakeModel in a process of its own, for benchmarks that measure the parent's CPU: the model's work is not counted
// in it. Forked with an IPC channel: `{ turns }` starts the model and answers `{ url, env }` (its agent setup for
// Claude Code); `close` closes it (its HOME removed) and ends the process.
import { fakeModel } from 'subvisor/testing';

let model;
process.on('message', async (message) => {
  if (message.type === 'start') {
    model = await fakeModel({ turns: message.turns });
    const setup = model.setup(message.agent);
    process.send({ url: model.url, env: setup.env, home: setup.home });
  } else if (message.type === 'close') {
    await model?.close();
    process.disconnect();
  }
});
