// The dashboard page's script: the runs' table and one run's panel from the server's event streams, and the run's controls. The child's text is only ever set as text, never as HTML.
(() => {
  'use strict';

  // The token came in the URL; from here on the page's cookie carries it. It leaves the address bar (and history).
  if (new URLSearchParams(location.search).has('token')) history.replaceState(null, '', location.pathname);

  const $ = (id) => document.getElementById(id);
  const tbody = document.querySelector('#runs tbody');
  /** Each run's row data and its table row. */
  const rows = new Map();
  let selected = null;
  let selectedStream = null;
  let selectedEnded = false;
  /** The last list item of streamed text or thinking in the panel, to append deltas to. */
  let textItem = null;
  const MAX_ITEMS = 1000;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function duration(ms) {
    if (ms < 0 || !Number.isFinite(ms)) return '';
    const s = Math.floor(ms / 1000);
    if (s < 60) return `${s}s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
    return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
  }

  function elapsed(row) {
    const start = row.startedAt ?? row.queuedAt;
    return duration((row.endedAt ?? Date.now()) - start);
  }

  function tokens(row) {
    const total = row.inputTokens + row.outputTokens;
    return total === 0 ? '' : total.toLocaleString('en-US');
  }

  function cost(row) {
    return row.costUsd === null ? '' : `$${row.costUsd.toFixed(row.costUsd < 1 ? 4 : 2)}`;
  }

  function stateBadge(state) {
    return el('span', `state ${state}`, state);
  }

  function renderRow(row) {
    let entry = rows.get(row.id);
    if (entry === undefined) {
      const tr = el('tr');
      tr.dataset.id = row.id;
      tr.addEventListener('click', () => select(row.id));
      entry = { row, tr };
      rows.set(row.id, entry);
      tbody.prepend(tr);
    }
    entry.row = row;
    const tr = entry.tr;
    tr.replaceChildren(
      el('td', 'state-cell'),
      el('td', 'run', row.attempt > 1 ? `${row.id} (attempt ${row.attempt})` : row.id),
      el('td', 'label', row.label),
      el('td', 'task', row.task),
      el('td', 'number elapsed', elapsed(row)),
      el('td', 'number turns', row.turns === 0 ? '' : row.turns),
      el('td', 'number tokens', tokens(row)),
      el('td', 'number cost', cost(row)),
      el('td', 'last', row.lastEvent),
    );
    tr.firstChild.append(stateBadge(row.state));
    tr.title = row.task;
    tr.classList.toggle('selected', row.id === selected);
    $('empty').hidden = rows.size > 0;
    if (row.id === selected) renderSelectedRow(row);
  }

  function removeRow(id) {
    const entry = rows.get(id);
    if (entry === undefined) return;
    entry.tr.remove();
    rows.delete(id);
    $('empty').hidden = rows.size > 0;
  }

  function renderCounts(counts) {
    const list = $('counts');
    list.replaceChildren();
    for (const [name, count] of Object.entries(counts)) {
      if (count === 0) continue;
      const item = el('li', '', ` ${name}`);
      item.prepend(el('b', '', count));
      list.append(item);
    }
  }

  /** One line per rate-limit gate that is not open: shut until when, or reopening, and what shut it. */
  function renderGates(gates) {
    const node = $('gates');
    node.hidden = gates.length === 0;
    node.textContent = gates
      .map((gate) => {
        const when = gate.state === 'shut' ? `shut until ${new Date(gate.until).toLocaleTimeString()}` : `reopening, ${gate.allowance} may start now`;
        const why = gate.reason === '' ? '' : ` (${gate.reason})`;
        return `rate-limited: ${gate.key} ${when}, ${gate.waiting} waiting${why}`;
      })
      .join(' · ');
  }

  function connection(state) {
    const node = $('connection');
    node.className = `connection ${state}`;
    node.textContent = state === 'live' ? 'live' : 'reconnecting…';
  }

  /* The board ---------------------------------------------------------------------------------- */

  const board = new EventSource('api/stream');
  board.addEventListener('open', () => connection('live'));
  board.addEventListener('error', () => connection('lost'));
  board.addEventListener('snapshot', (message) => {
    const snapshot = JSON.parse(message.data);
    $('title').textContent = snapshot.title;
    document.title = snapshot.title;
    $('label-head').textContent = snapshot.kind === 'queue' ? 'profile' : 'protocol';
    for (const id of [...rows.keys()]) if (!snapshot.rows.some((row) => row.id === id)) removeRow(id);
    for (const row of snapshot.rows) renderRow(row);
    renderCounts(snapshot.counts);
    renderGates(snapshot.gates);
  });
  board.addEventListener('rows', (message) => {
    const change = JSON.parse(message.data);
    for (const row of change.rows) renderRow(row);
    for (const id of change.removed) removeRow(id);
    renderCounts(change.counts);
    renderGates(change.gates);
  });

  // Live runs' elapsed time, every second.
  setInterval(() => {
    for (const { row, tr } of rows.values()) if (row.endedAt === null) tr.querySelector('.elapsed').textContent = elapsed(row);
  }, 1000);

  /* The selected run ---------------------------------------------------------------------------- */

  function select(id) {
    if (selectedStream !== null) selectedStream.close();
    selected = id;
    selectedEnded = false;
    textItem = null;
    for (const { row, tr } of rows.values()) tr.classList.toggle('selected', row.id === id);
    $('detail').hidden = false;
    $('detail-id').textContent = id;
    $('events').replaceChildren();
    $('control-result').textContent = '';
    $('outcome-block').hidden = true;
    selectedStream = new EventSource(`api/runs/${encodeURIComponent(id)}/stream`);
    selectedStream.addEventListener('detail', (message) => {
      const detail = JSON.parse(message.data);
      $('events').replaceChildren();
      textItem = null;
      $('detail-task').textContent = detail.task;
      $('events-dropped').textContent = detail.dropped > 0 ? `(the ${detail.dropped} oldest not kept)` : '';
      renderSelectedRow(detail.row);
      for (const event of detail.events) addEvent(event);
      if (detail.outcome !== null) renderOutcome(detail.outcome, detail.answer);
    });
    selectedStream.addEventListener('update', (message) => {
      const update = JSON.parse(message.data);
      if (update.row) renderSelectedRow(update.row);
      for (const event of update.events ?? []) addEvent(event);
      if (update.outcome) renderOutcome(update.outcome, update.answer ?? null);
    });
    selectedStream.addEventListener('error', () => {
      // An ended run's stream has nothing more to say; a live one reconnects by itself.
      if (selectedEnded) selectedStream.close();
    });
  }

  function renderSelectedRow(row) {
    const state = $('detail-state');
    state.className = `state ${row.state}`;
    state.textContent = row.state;
    const meta = $('detail-meta');
    meta.replaceChildren();
    const facts = [
      [$('label-head').textContent, row.label],
      ['attempt', row.attempt],
      ['elapsed', elapsed(row)],
      ['turns', row.turns],
      ['tokens', `${row.inputTokens.toLocaleString('en-US')} in, ${row.outputTokens.toLocaleString('en-US')} out`],
      ['cost', cost(row) || '-'],
    ];
    for (const [name, value] of facts) meta.append(el('dt', '', name), el('dd', '', value));
    const ended = row.endedAt !== null;
    selectedEnded = ended;
    for (const id of ['steer', 'steer-text', 'cancel', 'terminate']) $(id).disabled = ended;
  }

  function renderOutcome(outcome, answer) {
    selectedEnded = true;
    $('outcome-block').hidden = false;
    const parts = [outcome.status];
    if (outcome.errorCode) parts.push(outcome.errorCode);
    if (outcome.error) parts.push(outcome.error);
    parts.push(`${outcome.turns} turn${outcome.turns === 1 ? '' : 's'}`, duration(outcome.durationMs));
    if (outcome.truncated) parts.push('answer truncated');
    $('outcome').textContent = parts.join(' · ');
    $('answer').textContent = answer ?? '(no answer)';
  }

  function time(at) {
    return new Date(at).toLocaleTimeString('en-GB', { hour12: false });
  }

  function addEvent(event) {
    const list = $('events');
    const streamed = event.type === 'assistant-text-delta' ? 'text' : event.type === 'assistant-thinking-delta' ? 'thinking' : null;
    if (streamed !== null) {
      if (textItem === null || !textItem.classList.contains(streamed)) {
        textItem = el('li', streamed);
        list.append(textItem);
      }
      textItem.append(document.createTextNode(event.text));
    } else {
      textItem = null;
      const item = el('li');
      item.dataset.type = event.type;
      item.append(el('span', 'time', time(event.at)), el('span', 'type', event.type), el('span', 'text', event.text));
      item.addEventListener('click', () => {
        const shown = item.querySelector('pre');
        if (shown) shown.remove();
        else item.append(el('pre', '', event.json));
      });
      list.append(item);
    }
    while (list.childElementCount > MAX_ITEMS) list.firstElementChild.remove();
    list.scrollTop = list.scrollHeight;
  }

  /* Controls ------------------------------------------------------------------------------------ */

  async function control(action, body) {
    const id = selected;
    const result = $('control-result');
    result.textContent = `${action}…`;
    try {
      const response = await fetch(`api/runs/${encodeURIComponent(id)}/${action}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      const answer = await response.json();
      if (id !== selected) return;
      if (!response.ok) result.textContent = `${action} refused: ${answer.error}`;
      else if (answer.ack) result.textContent = `${action} ${answer.ack.status}${answer.ack.seq ? ` (seq ${answer.ack.seq})` : ''}${answer.ack.reason ? `: ${answer.ack.reason}` : ''}`;
      else result.textContent = `${action}: the run ended ${answer.outcome.status}`;
    } catch (error) {
      result.textContent = `${action} failed: ${error.message}`;
    }
  }

  $('steer-form').addEventListener('submit', (submit) => {
    submit.preventDefault();
    const text = $('steer-text').value;
    if (text.trim() === '') return;
    $('steer-text').value = '';
    void control('steer', { text });
  });
  $('cancel').addEventListener('click', () => void control('cancel', {}));
  $('terminate').addEventListener('click', () => void control('terminate', {}));
  $('close-detail').addEventListener('click', () => {
    if (selectedStream !== null) selectedStream.close();
    selectedStream = null;
    selected = null;
    $('detail').hidden = true;
    for (const { tr } of rows.values()) tr.classList.remove('selected');
  });
})();
