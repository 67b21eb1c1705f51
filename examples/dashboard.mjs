// examples/dashboard.mjs: a pool's live dashboard: served on 127.0.0.1 with a token, the runs it shows read back
// through its JSON feed (what the page's script reads too), then closed.
import { createSupervisor } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

// The bundled fake child stands in for a real agent such as { command: 'fen', args: ['--presenter', 'rpc'] }.
const child = fakeChild('echo');
const sup = createSupervisor({ concurrency: 2, defaults: { ...child } });
const dashboard = await sup.serveDashboard({ title: 'docs review' });
console.log(`open ${new URL(dashboard.url).origin}/?token=... (the token is a secret: the URL is printed whole in real use)`);

const runs = ['api', 'cli', 'agent'].map((page) => sup.spawn({ task: `Summarise docs/${page}.md` }));
await Promise.all(runs.map((run) => run.outcome));
await new Promise((resolve) => setTimeout(resolve, 300)); // the page's feed is sent every 150 ms

// Without the token, nothing: the URL's token, or `Authorization: Bearer <token>`.
const token = new URL(dashboard.url).searchParams.get('token');
console.log(`without the token: ${(await fetch(new URL('/api/board', dashboard.url))).status}`);
const board = await (await fetch(new URL('/api/board', dashboard.url), { headers: { authorization: `Bearer ${token}` } })).json();
for (const row of board.rows) console.log(`${row.state}: ${row.task} (${row.turns} turn, ${row.inputTokens + row.outputTokens} tokens)`);

await dashboard.close(); // a served dashboard keeps the process alive until closed
await sup.shutdown();
child.cleanup();
