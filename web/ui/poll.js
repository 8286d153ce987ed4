// poll.js: polling GET /api/runner and applying its answers: rule 1 (an
// answer applies only if it answers the newest request, each task only at
// a stateVersion at least the one shown; an action's reply under the same
// rule, unless a later answer was applied) and rule 4 (back off to a
// capped interval, reset on a lifecycle change or a user action); the
// connection line.

import { $ } from './dom.js';
import { state } from './state.js';
import { getJSON, nextRequest, sent } from './net.js';
import { render, renderBanner } from './render.js';
import { mergeInFlight, selectInitial } from './tasks.js';
import { loadReview, reviewLoads } from './review.js';
import { loadQuestions, questionsInFlight } from './questions.js';
import { loadPlanRequests, planRequestsInFlight } from './suggestions.js';

// Polling intervals come from the page's markup (see index.html).
const pollBase = intervalFromMarkup('data-poll-base-ms', 1000);
const pollCap = Math.max(pollBase, intervalFromMarkup('data-poll-cap-ms', 8000));

// The number (net.js's sent) of the newest request whose answer was
// applied (rule 1).
let applied = 0;

let interval = pollBase;
let pollTimer = 0;

function intervalFromMarkup(name, fallback) {
  const v = Number(document.documentElement.getAttribute(name));
  return Number.isFinite(v) && v >= 50 ? v : fallback;
}

// tick sends a poll and arms the next one. The next poll does not wait for
// this one's answer: a slow answer must not stop the screen from asking,
// which is why rule 1 must hold when answers overtake each other.
export function tick() {
  pollTimer = setTimeout(tick, interval);
  poll();
}

// pollSoon resets the interval to its base and asks again after it.
function pollSoon() {
  interval = pollBase;
  clearTimeout(pollTimer);
  pollTimer = setTimeout(tick, pollBase);
}

// userActed is rule 4's reset on a user action.
export function userActed() {
  pollSoon();
}

export async function poll() {
  const n = nextRequest();
  let reply;
  try {
    reply = await getJSON('/api/runner');
  } catch (err) {
    showConnection(err);
    backOff();
    return;
  }
  showConnection(null);
  if (n !== sent) return; // a later request was sent: this answer may be older
  applied = n;
  state.shuttingDown = reply.shuttingDown;
  state.demo = reply.demo;
  const changed = applyTasks(reply.tasks);
  if (changed) {
    pollSoon();
  } else {
    backOff();
  }
  if (!state.selected && state.order.length) selectInitial();
  render();
  if (state.selected && questionsInFlight(state.selected)) loadQuestions(state.selected, true);
  const shown = state.selected && state.reviews.get(state.selected);
  if (shown && mergeInFlight(shown.merge) && !reviewLoads.busy(state.selected)) loadReview(state.selected);
  if (state.selected && planRequestsInFlight(state.selected)) loadPlanRequests(state.selected, true);
}

function backOff() {
  interval = Math.min(interval * 2, pollCap);
}

// applyTasks applies each task's status whose stateVersion is at least the
// one shown, and reports whether any attempt or task moved in its
// lifecycle (a state, a label or the task's status changed).
function applyTasks(tasks) {
  let lifecycle = false;
  for (const st of tasks) {
    const shown = state.tasks.get(st.name);
    if (shown && st.stateVersion < shown.stateVersion) continue;
    if (!shown || lifecycleKey(shown) !== lifecycleKey(st)) lifecycle = true;
    state.tasks.set(st.name, st);
    if (!state.order.includes(st.name)) state.order.push(st.name);
  }
  return lifecycle;
}

function lifecycleKey(st) {
  return st.task.status + '|' + st.attempts.map((a) => a.id + ':' + a.state + ':' + a.label).join('|');
}

// applyActionStatus is rule 1 for an action's reply.
export function applyActionStatus(n, status) {
  if (!status || n < applied) return;
  applied = n;
  applyTasks([status]);
}

function showConnection(err) {
  const box = $('connection');
  if (!err) {
    box.textContent = 'Up to date ' + new Date().toLocaleTimeString();
    box.className = 'connection ok';
    return;
  }
  if (err.code === 'shutting-down') {
    state.shuttingDown = true;
    renderBanner();
  }
  box.textContent = 'Cannot reach the server (' + err.message + '); trying again';
  box.className = 'connection bad';
}
