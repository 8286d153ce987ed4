// attempts.js: the attempts table and the selected attempt: every attempt
// row, a stale one with its cause (rule 2), aria-current on the selected
// row (rule 5, through markCurrent), the attempt's facts, its live output
// and its diff.

import { $, el, markCurrent, redraw } from './dom.js';
import { cost, duration, elapsedOf, labelClass, shortId, tokens, usage } from './format.js';
import { selectedTask, state } from './state.js';
import { getText } from './net.js';
import { render } from './render.js';
import { actionButton } from './tasks.js';

// Live output kept in the page: the tail, at most this many characters.
const maxOutput = 200 * 1024;

// ---- Attempt rows and details (rules 2 and 5) ----

function selectAttempt(id, byPerson) {
  state.attempt = id;
  const st = selectedTask();
  const current = st && st.attempts.find((a) => a.current);
  state.followCurrent = !byPerson || (current && current.id === id);
  render();
}

export function renderAttempts(st) {
  const body = $('attempt-rows');
  // Newest first; every attempt stays, a stale one with its cause (rule 2).
  const attempts = st.attempts.slice().reverse();
  const current = st.attempts.find((a) => a.current);
  if (state.followCurrent && current) state.attempt = current.id;
  if (state.attempt && !attempts.some((a) => a.id === state.attempt)) state.attempt = current ? current.id : null;
  $('no-attempts').hidden = attempts.length > 0;
  body.closest('.table-wrap').hidden = attempts.length === 0;
  const key = JSON.stringify([st.name, state.attempt, st.cancellable, st.retryable, st.runAgain, st.attempts]);
  redraw(body, key, () => {
    body.replaceChildren(...attempts.map((a) => {
      const buttons = [];
      if (a.current) {
        if (st.cancellable) buttons.push(actionButton('cancel', 'Cancel', a.id, 'danger'));
        if (st.retryable) buttons.push(actionButton('retry', 'Retry', a.id));
        if (st.runAgain) buttons.push(actionButton('run-again', 'Run again on the current code', a.id, 'primary'));
      }
      const elapsed = elapsedOf(a);
      const live = a.elapsedMs === null && a.startedAt && (a.state === 'running' || a.state === 'pending');
      return el('tr', {
        tabindex: '0', dataset: { attempt: a.id, key: 'attempt:' + a.id, state: a.state },
        onclick: () => selectAttempt(a.id, true),
        onkeydown: (ev) => {
          if ((ev.key === 'Enter' || ev.key === ' ') && ev.target === ev.currentTarget) {
            ev.preventDefault();
            selectAttempt(a.id, true);
          }
        },
      },
      el('td', { className: 'attempt-cell' },
        el('code', { title: a.id }, shortId(a.id)), a.current ? el('span', { className: 'current-mark small' }, 'current') : null,
        el('div', { className: 'muted small' }, a.kind, a.item === null ? '' : ' · item ' + a.item)),
      el('td', {}, el('span', { className: labelClass(a) + ' label' }, a.label)),
      el('td', live ? { dataset: { started: a.startedAt } } : {}, duration(elapsed)),
      el('td', { className: 'num' }, usage(a.usage)),
      el('td', { className: 'row-actions' }, buttons));
    }));
    markCurrent(body.querySelectorAll('tr'), (r) => r.dataset.attempt === state.attempt);
  });
}

export function renderAttemptDetail(st) {
  const a = st.attempts.find((x) => x.id === state.attempt);
  $('attempt-detail').hidden = !a;
  if (!a) {
    stopFollowing();
    return;
  }
  $('attempt-id').textContent = shortId(a.id);
  $('attempt-id').title = a.id;
  const label = $('attempt-label');
  label.textContent = a.label;
  label.className = labelClass(a);
  const facts = [
    ['Kind', a.kind], ['Plan item', a.item === null ? '—' : String(a.item)],
    ['First reason', a.firstReason || '—'], ['Stop reason', a.stopReason || '—'],
    ['Exit code', a.exitCode === null ? '—' : String(a.exitCode)],
    ['Started', a.startedAt ? new Date(a.startedAt).toLocaleTimeString() : '—'],
    ['Elapsed', duration(elapsedOf(a))],
  ];
  if (a.usage) facts.push(['Tokens', tokens(a.usage)], ['Cost', cost(a.usage)]);
  if (st.stopRequested && st.stopRequested.attemptId === a.id) {
    facts.push(['Stop requested', st.stopRequested.reason + (st.stopRequested.saved ? '' : ' (not saved yet)')]);
  }
  if (st.unresolved && st.unresolved.attemptId === a.id) facts.push(['Needs restart', st.unresolved.reason]);
  const dl = $('attempt-facts');
  const ticking = a.elapsedMs === null && a.startedAt && (a.state === 'running' || a.state === 'pending');
  dl.replaceChildren(...facts.map(([k, v]) => el('div', {}, el('dt', {}, k),
    el('dd', k === 'Elapsed' && ticking ? { dataset: { started: a.startedAt } } : {}, v))));
  // The audit's finding is why the task waits for a person: said whole.
  if (a.safetyFinding) {
    dl.append(el('div', { className: 'wide' }, el('dt', {}, 'Safety finding'), el('dd', { className: 'finding' }, a.safetyFinding)));
  }
  // The label carries the diagnostic; one of several lines is shown whole.
  if (a.diagnostic.includes('\n')) {
    dl.append(el('div', { className: 'wide' }, el('dt', {}, 'Diagnostic'), el('dd', { className: 'diagnostic' }, a.diagnostic)));
  }
  if (a.live) follow(st.name, a.id);
  else endFollow(a.id);
  if (a.hasDiff && !a.live) showDiff(st.name, a.id);
  else hideDiff();
}

// ---- Live output ----

let stream = null; // { attempt, source, text, ended }

function follow(task, attempt) {
  if (stream && stream.attempt === attempt) return;
  stopFollowing();
  const s = { attempt, source: null, text: '', ended: false, closed: false };
  stream = s;
  $('output').textContent = '';
  $('output-state').textContent = '(connecting)';
  $('output-view').hidden = false;
  $('output-view').open = true;
  const source = new EventSource('/api/output?task=' + encodeURIComponent(task) + '&attempt=' + encodeURIComponent(attempt));
  s.source = source;
  source.addEventListener('output', (ev) => {
    if (stream !== s) return;
    $('output-state').textContent = '(following)';
    appendOutput(s, JSON.parse(ev.data));
  });
  source.addEventListener('end', () => {
    if (stream !== s) return;
    source.close();
    s.ended = true;
    $('output-state').textContent = '(ended)';
  });
  source.addEventListener('error', () => {
    if (stream !== s || source.readyState !== EventSource.CLOSED) return;
    s.ended = true;
    $('output-state').textContent = s.text ? '(ended)' : '(no live output)';
  });
}

function appendOutput(s, chunk) {
  if (!chunk) return;
  const pre = $('output');
  const atEnd = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 40;
  s.text += chunk;
  if (s.text.length > maxOutput) {
    const cut = s.text.indexOf('\n', s.text.length - maxOutput);
    s.text = s.text.slice(cut >= 0 ? cut + 1 : s.text.length - maxOutput);
  }
  pre.textContent = s.text;
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

// endFollow keeps what was shown of an attempt that just stopped, until
// another attempt is selected.
function endFollow(attempt) {
  if (stream && stream.attempt !== attempt) stopFollowing();
  if (stream && !stream.closed) {
    stream.source.close();
    stream.closed = true;
    if (!stream.ended) $('output-state').textContent = '(ended)';
    stream.ended = true;
    // What it printed stays at hand, folded: the result matters now.
    $('output-view').open = false;
  }
}

export function stopFollowing() {
  if (stream) stream.source.close();
  stream = null;
  $('output-view').hidden = true;
  $('output').textContent = '';
}

// ---- Diff view ----

const diffs = new Map(); // attempt ID → the diff's text, or an Error
let diffShown = null;

async function showDiff(task, attempt) {
  $('diff-view').hidden = false;
  if (diffShown === attempt) return;
  diffShown = attempt;
  if (!diffs.has(attempt)) {
    $('diff').replaceChildren(el('p', { className: 'muted' }, 'Loading the diff…'));
    try {
      diffs.set(attempt, await getText('/api/diff?task=' + encodeURIComponent(task) + '&attempt=' + encodeURIComponent(attempt)));
    } catch (err) {
      diffs.set(attempt, err);
    }
    if (diffShown !== attempt) return;
  }
  drawDiff(diffs.get(attempt));
}

function hideDiff() {
  diffShown = null;
  $('diff-view').hidden = true;
}

// drawDiff renders a unified diff: file headers, hunks, added and removed
// lines. Each line keeps its +/- sign, so the colours are never the only
// way to tell them apart.
function drawDiff(d) {
  const box = $('diff');
  if (d instanceof Error) {
    box.replaceChildren(el('p', { className: 'error' }, 'The diff could not be read: ' + d.message));
    $('diff-summary').textContent = '';
    return;
  }
  let files = 0, added = 0, removed = 0;
  const out = [];
  let pre = null;
  for (const line of d.replace(/\n$/, '').split('\n')) {
    if (line.startsWith('diff --git ')) {
      files++;
      const m = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
      out.push(el('div', { className: 'diff-file' }, m ? (m[1] === m[2] ? m[2] : m[1] + ' → ' + m[2]) : line.slice(11)));
      pre = null;
      continue;
    }
    if (!pre) {
      pre = el('pre', { className: 'diff-body' });
      out.push(pre);
    }
    let cls = 'ctx';
    if (line.startsWith('+++ ') || line.startsWith('--- ') || /^(index |new file|deleted file|similarity|rename |old mode|new mode)/.test(line)) cls = 'meta';
    else if (line.startsWith('@@')) cls = 'hunk';
    else if (line.startsWith('+')) { cls = 'add'; added++; }
    else if (line.startsWith('-')) { cls = 'del'; removed++; }
    else if (line.startsWith('codeboost:')) cls = 'note';
    pre.append(el('span', { className: 'line ' + cls }, line + '\n'));
  }
  box.replaceChildren(...out);
  $('diff-summary').textContent = `${files} file${files === 1 ? '' : 's'}, +${added} −${removed}`;
}
