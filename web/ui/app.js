// The codeboost review screen: ES modules, no framework, no build step.
//
// The server computes every fact the screen shows (labels, which buttons
// are offered, versions); the screen never works them out. What the screen
// owns is the contract's UI rules (seed 000, "UI rules"):
//
//  1. An old poll cannot overwrite newer state: a GET /api/runner answer is
//     applied only if it answers the newest request sent, and each task in
//     it only if its stateVersion is at least the one shown. An action's
//     reply carries the task's status too; it is applied under the same
//     version rule, unless the answer to a later request was applied first.
//     Every other reply (the plan, questions, planning requests) is applied
//     only if no reply to a later load of its task was applied first
//     (loadOrder).
//  2. Stale results stay visible: every attempt row is shown, a stale one
//     with its cause.
//  3. Drafts survive: a response never clears a text box; it clears only if
//     the text still equals what was sent.
//  4. Polling backs off to a capped interval and resets only on a
//     lifecycle change or a user action.
//  5. The selected task and attempt rows carry aria-current.
//  6. A lost response is resent with the same actionId (a 409 or 400 is an
//     answer and is never resent).
//
// Where each rule lives: rule 1 in poll.js (GET /api/runner's answers and
// an action's reply, numbered by net.js's sent) and state.js's loadOrder,
// used by review.js, questions.js and suggestions.js for their replies;
// rule 2 in attempts.js; rule 3 in review.js (the feedback composer and
// the plan import box) and questions.js (the question box); rule 4 in
// poll.js; rule 5 in dom.js's markCurrent, used by tasks.js and
// attempts.js; rule 6 in net.js's act.
//
// Everything the server sends is put in the page as text, never as HTML.
//
// This is the entry module (index.html loads it): it wires the page's
// events and timers and sends the first poll, after every import. The
// other modules only declare at their top level, so their import cycles
// are harmless:
//
//   dom.js          $, el, redraw, markCurrent: small DOM helpers
//   format.js       words and classes for what the server sends
//   state.js        the shared state, selectedTask, loadOrder
//   net.js          requests: getJSON, getText, act, report
//   poll.js         polling and applying GET /api/runner's answers
//   render.js       render: the whole page, panel by panel
//   tasks.js        the task list, selection, the task's actions, merge
//   attempts.js     attempt rows and details, live output, the diff
//   review.js       the plan, approvals, feedback, plan import
//   questions.js    the Questions panel
//   suggestions.js  the Suggestions panel

import { $ } from './dom.js';
import { duration } from './format.js';
import { state } from './state.js';
import { poll, tick, userActed } from './poll.js';
import { selectTask } from './tasks.js';
import { importPlan, sendFeedback } from './review.js';
import { askQuestion } from './questions.js';
import { askPlanning } from './suggestions.js';

// ---- Live elapsed time ----

setInterval(() => {
  for (const cell of document.querySelectorAll('[data-started]')) {
    cell.textContent = duration(Math.max(0, Date.now() - Date.parse(cell.dataset.started)));
  }
}, 1000);

// ---- Keyboard ----

function typing(target) {
  return target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement ||
    target instanceof HTMLSelectElement || (target && target.isContentEditable);
}

function moveTask(step) {
  if (!state.order.length) return;
  const at = state.order.indexOf(state.selected);
  const next = state.order[Math.min(state.order.length - 1, Math.max(0, at < 0 ? 0 : at + step))];
  selectTask(next, true);
}

$('task-list').addEventListener('keydown', (ev) => {
  if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
  const buttons = [...$('task-list').querySelectorAll('button.task')];
  const at = buttons.indexOf(document.activeElement);
  const next = buttons[Math.min(buttons.length - 1, Math.max(0, at + (ev.key === 'ArrowDown' ? 1 : -1)))];
  if (next) {
    ev.preventDefault();
    next.focus();
  }
});

$('attempt-rows').addEventListener('keydown', (ev) => {
  if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
  const rows = [...$('attempt-rows').querySelectorAll('tr')];
  const at = rows.indexOf(ev.target);
  if (at < 0) return;
  const next = rows[Math.min(rows.length - 1, Math.max(0, at + (ev.key === 'ArrowDown' ? 1 : -1)))];
  ev.preventDefault();
  next.focus();
});

document.addEventListener('keydown', (ev) => {
  if (typing(ev.target) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === 'j') moveTask(1);
  else if (ev.key === 'k') moveTask(-1);
  else if (ev.key === 'r') refresh();
});

function refresh() {
  userActed();
  poll();
}

$('refresh').addEventListener('click', refresh);
$('send-note').addEventListener('click', () => sendFeedback('change-note'));
$('send-reject').addEventListener('click', () => sendFeedback('reject'));
$('send-guidance').addEventListener('click', () => sendFeedback('guidance'));
$('plan-import').addEventListener('click', importPlan);
$('ask').addEventListener('click', askQuestion);
$('ask-suggestions').addEventListener('click', () => askPlanning('suggestion'));
$('ask-draft').addEventListener('click', () => askPlanning('draft'));
$('plan-file').addEventListener('change', async () => {
  const f = $('plan-file').files[0];
  if (f) $('plan-source').value = await f.text();
});

// ---- Start ----

tick();
