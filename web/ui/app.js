// The codeboost review screen: one module, no framework, no build step.
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
// Everything the server sends is put in the page as text, never as HTML.

const $ = (id) => document.getElementById(id);

// Polling intervals come from the page's markup (see index.html).
const pollBase = intervalFromMarkup('data-poll-base-ms', 1000);
const pollCap = Math.max(pollBase, intervalFromMarkup('data-poll-cap-ms', 8000));

// A lost action response is resent this many times, after these pauses.
const resendPauses = [250, 500, 1000, 2000];
// Live output kept in the page: the tail, at most this many characters.
const maxOutput = 200 * 1024;
// A request that has not answered after this long is given up (its answer
// could only be older than the next one's anyway).
const requestTimeout = 30000;

const closedStatuses = new Set(['merged', 'cancelled']);

const state = {
  order: [],            // task names, in configuration order
  tasks: new Map(),     // name → the TaskStatus shown
  reviews: new Map(),   // name → the ReviewReply shown
  shuttingDown: false,
  demo: false,
  selected: null,       // the selected task's name
  attempt: null,        // the selected attempt's ID
  followCurrent: true,  // the selection follows the task's current attempt
  drafts: new Map(),    // name → the feedback draft of a task not shown
  questions: new Map(), // name → the task's questions, oldest first (GET /api/questions)
  planRequests: new Map(), // name → the plan's planning requests (GET /api/plan/requests); null: no planning routes
};

// Requests that carry a task's status are numbered as they are sent (rule 1).
let sent = 0;
let applied = 0;

// ---- Polling (rules 1 and 4) ----

let interval = pollBase;
let pollTimer = 0;

function intervalFromMarkup(name, fallback) {
  const v = Number(document.documentElement.getAttribute(name));
  return Number.isFinite(v) && v >= 50 ? v : fallback;
}

// tick sends a poll and arms the next one. The next poll does not wait for
// this one's answer: a slow answer must not stop the screen from asking,
// which is why rule 1 must hold when answers overtake each other.
function tick() {
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
function userActed() {
  pollSoon();
}

async function poll() {
  const n = ++sent;
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
  if (shown && mergeInFlight(shown.merge) && !reviewsLoading.has(state.selected)) loadReview(state.selected);
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
function applyActionStatus(n, status) {
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

// ---- Requests ----

class RequestError extends Error {
  constructor(message, status, code, reply) {
    super(message);
    this.status = status;
    this.code = code;
    this.reply = reply;
  }
}

async function fetchText(url, init) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), requestTimeout);
  try {
    const res = await fetch(url, { ...init, signal: ctl.signal, cache: 'no-store' });
    const text = await res.text();
    return { res, text };
  } finally {
    clearTimeout(timer);
  }
}

// errorOf words a reply that is not a success: the server's own message
// when it sent one, else the status line and body.
function errorOf(res, text, reply) {
  const e = reply && (reply.error || (reply.outcome === 'refused' ? reply : null));
  const message = e && e.message ? e.message : (res.status + ' ' + (text.trim() || res.statusText)).slice(0, 300);
  return new RequestError(message, res.status, e ? e.code : '', reply);
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

async function getJSON(url) {
  const { res, text } = await fetchText(url);
  const reply = parse(text);
  if (!res.ok || reply === null) throw errorOf(res, text, reply);
  return reply;
}

async function getText(url) {
  const { res, text } = await fetchText(url);
  if (!res.ok) throw errorOf(res, text, parse(text));
  return text;
}

function newActionId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  // Pages served over plain http from another host are not a secure
  // context and have no randomUUID: build the same lowercase UUID v4.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// act sends one user action (rule 6). Its actionId is made once, when the
// person acts; a lost response (no answer, a cut-off body, a 5xx or a 503)
// is resent with the very same body, so the server replays what it saved
// instead of acting twice. A 4xx is the server's answer and is final.
async function act(url, body) {
  userActed();
  const sendBody = JSON.stringify({ ...body, actionId: newActionId() });
  for (let tries = 1; ; tries++) {
    const n = ++sent;
    let res, text;
    try {
      ({ res, text } = await fetchText(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: sendBody }));
    } catch (err) {
      if (tries <= resendPauses.length) {
        await pause(resendPauses[tries - 1]);
        continue;
      }
      throw new RequestError('no answer after ' + tries + ' tries (' + err.message + '); whether the server acted shows at the next update', 0, 'lost');
    }
    const reply = parse(text);
    if (res.status >= 500 && tries <= resendPauses.length) {
      await pause(resendPauses[tries - 1]);
      continue;
    }
    if (reply) applyActionStatus(n, reply.status);
    render();
    if (!res.ok || reply === null) throw errorOf(res, text, reply);
    return reply;
  }
}

// ---- Actions ----

function selectedTask() {
  return state.selected ? state.tasks.get(state.selected) : null;
}

async function runnerAction(action, attemptId) {
  const st = selectedTask();
  if (!st) return;
  const body = { task: st.name, action, expectedStateVersion: st.stateVersion };
  if (action === 'start' || action === 'resume') body.expectedReviewVersion = st.reviewVersion;
  if (attemptId) body.attemptId = attemptId;
  await report(actionName(action), () => act('/api/runner', body), (reply) => {
    if (reply.attemptId && (action === 'retry' || action === 'run-again' || action === 'start' || action === 'resume')) {
      state.followCurrent = true;
    }
  });
}

function actionName(action) {
  return {
    start: 'Start', resume: 'Resume', cancel: 'Cancel', retry: 'Retry',
    'run-again': 'Run again on the current code', 'cancel-task': 'Cancel task',
  }[action] || action;
}

// report runs an action and says how it went in the message line.
async function report(what, run, after) {
  const msg = $('message');
  msg.className = 'message busy';
  msg.textContent = what + '…';
  try {
    const reply = await run();
    msg.className = 'message ok';
    msg.textContent = what + ': ' + (reply.message || reply.outcome) + (reply.replayed ? ' (already done)' : '');
    if (after) after(reply);
    render();
    return reply;
  } catch (err) {
    msg.className = 'message error';
    msg.textContent = what + ' failed: ' + err.message;
    render();
    return null;
  }
}

// ---- Merge ----

const mergeWords = {
  submitting: 'Merging…', queued: 'In the merge queue', merged: 'Merged',
  removed: 'Left the merge queue', failed: 'Not merged',
};

function mergeInFlight(m) {
  return !!m && (m.state === 'submitting' || m.state === 'queued');
}

// mergeNote says where the task's latest merge stands, and why when it
// did not merge.
function mergeNote(m) {
  return el('span', { className: 'merge-note', dataset: { merge: m.state } },
    el('span', { className: 'badge small s-' + (m.state === 'merged' ? 'completed' : mergeInFlight(m) ? 'running' : 'failed') }, mergeWords[m.state] || m.state),
    m.pullRequest ? ' ' + m.pullRequest : '',
    m.reason ? ': ' + m.reason : '');
}

async function mergeTask() {
  const st = selectedTask();
  const review = st && state.reviews.get(st.name);
  if (!st || !review) return;
  const reply = await report('Merge', () => act('/api/merge',
    { task: st.name, expectedStateVersion: st.stateVersion, expectedReviewVersion: review.reviewVersion }));
  if (reply) loadReview(st.name);
}

// checkpointNote says where a scope pause stands (#88): the paths the
// item's commit changed outside its scope, what the person does next, and
// the continuation's approval.
function checkpointNote(st, cp) {
  const paths = cp.scopePaths.join(', ');
  let text;
  if (st.task.status === 'needs amendment') {
    text = 'Item ' + cp.item + '\u2019s commit changed paths outside its scope: ' + paths +
      '. Amend item ' + cp.item + ' to declare them (import the amended plan), then approve the continuation.';
  } else if (cp.approval === 'approved') {
    text = 'Continuation after item ' + cp.item + ' approved at revision ' + cp.approvedRevision + (st.nextItem ? '; resume runs item ' + st.nextItem + ' next.' : '.');
  } else if (cp.approval === 'stale') {
    text = 'The continuation approved at revision ' + cp.approvedRevision + ' no longer admits: the plan or its review changed since.';
  } else {
    return null;
  }
  return el('span', { className: 'note checkpoint', dataset: { checkpoint: cp.attemptId } }, text);
}

async function approveContinuation() {
  const st = selectedTask();
  const review = st && state.reviews.get(st.name);
  if (!review) return;
  const reply = await report('Approve the continuation', () =>
    act('/api/review', { task: st.name, action: 'approve-continuation', expectedStateVersion: st.stateVersion, expectedReviewVersion: review.reviewVersion }));
  if (reply) loadReview(st.name);
}

async function approve(item) {
  const st = selectedTask();
  const review = st && state.reviews.get(st.name);
  if (!review) return;
  const reply = await report('Approve item ' + item, () =>
    act('/api/review', { task: st.name, action: 'approve', item, expectedReviewVersion: review.reviewVersion }));
  if (reply) loadReview(st.name);
}

// sendFeedback sends the composer's text as one review action. The draft
// is cleared only if it still holds what was sent (rule 3).
async function sendFeedback(kind) {
  const st = selectedTask();
  const review = st && state.reviews.get(st.name);
  if (!st || !review) return;
  const text = $('draft').value;
  if (!text.trim()) {
    $('message').className = 'message error';
    $('message').textContent = 'Write a note first.';
    $('draft').focus();
    return;
  }
  const item = $('draft-item').value ? Number($('draft-item').value) : null;
  let body, what;
  if (kind === 'change-note') {
    if (item === null) {
      $('message').className = 'message error';
      $('message').textContent = 'A change note is about one plan item: choose it under "About".';
      $('draft-item').focus();
      return;
    }
    body = { task: st.name, action: 'change-note', item, text };
    what = 'Save change note';
  } else if (kind === 'reject') {
    body = { task: st.name, action: 'reject', expectedRevision: review.revision, notes: [item === null ? { text } : { item, text }] };
    what = 'Reject with feedback';
  } else {
    body = { task: st.name, action: 'guidance', text };
    what = 'Send back with guidance';
  }
  const reply = await report(what, () => act('/api/review', body));
  if (reply) {
    clearDraftIfUnchanged(st.name, text);
    loadReview(st.name);
  }
}

function currentDraft(name) {
  return name === state.selected ? $('draft').value : (state.drafts.get(name) || '');
}

function setDraft(name, text) {
  if (name === state.selected) $('draft').value = text;
  else state.drafts.set(name, text);
}

// clearDraftIfUnchanged is rule 3: a draft edited while its request was
// on the way is the person's newer work, and stays.
function clearDraftIfUnchanged(name, sentText) {
  if (currentDraft(name) === sentText) setDraft(name, '');
}

async function importPlan() {
  const st = selectedTask();
  const review = st && state.reviews.get(st.name);
  if (!st || !review) return;
  const source = $('plan-source').value;
  if (!source.trim()) {
    $('message').className = 'message error';
    $('message').textContent = 'Paste a plan document or choose a file first.';
    return;
  }
  const reply = await report('Import plan', () =>
    act('/api/plan/import', { task: st.name, expectedRevision: review.revision, plan: source }));
  if (reply) {
    if ($('plan-source').value === source) $('plan-source').value = '';
    loadReview(st.name);
  }
}

// loadOrder is UI rule 1 for the replies other than GET /api/runner's (the
// plan, its questions, its planning requests): each load of a task is
// numbered as it is sent, and a reply is applied only if no reply to a
// later load of that task was applied first. Versions alone cannot say
// which of two replies is newer: an import or an applied suggestion
// leaves the review version as it was, and a question's reply has none.
function loadOrder() {
  const sentLoads = new Map();
  const appliedLoads = new Map();
  return {
    next(name) {
      const n = (sentLoads.get(name) || 0) + 1;
      sentLoads.set(name, n);
      return n;
    },
    take(name, n) {
      if (n < (appliedLoads.get(name) || 0)) return false; // a later load's reply is shown
      appliedLoads.set(name, n);
      return true;
    },
  };
}

const reviewLoads = loadOrder();
const questionLoads = loadOrder();
const planRequestLoads = loadOrder();

const reviewsLoading = new Set();

async function loadReview(name) {
  reviewsLoading.add(name);
  const n = reviewLoads.next(name);
  try {
    const review = await getJSON('/api/review?task=' + encodeURIComponent(name));
    if (!reviewLoads.take(name, n)) return;
    state.reviews.set(name, review);
    if (name === state.selected) {
      renderReview();
      const st = selectedTask();
      if (st) renderTaskActions(st); // the merge the review carries
    }
  } catch (err) {
    if (name === state.selected) {
      $('plan-items').replaceChildren(el('li', { className: 'error' }, 'The plan could not be read: ' + err.message));
    }
  } finally {
    reviewsLoading.delete(name);
  }
}

// reviewIfMoved reloads the plan when a status shows its review version
// moved (an approval or a note from another tab or person) or its context
// generation passed the plan's (an import, an applied suggestion or a new
// snapshot, which leave the review version as it was).
function reviewIfMoved(st) {
  const review = state.reviews.get(st.name);
  if (!review || reviewsLoading.has(st.name)) return;
  if (review.reviewVersion !== st.reviewVersion || st.task.contextGeneration > review.contextGeneration) loadReview(st.name);
}

// ---- Selection (rule 5) ----

function selectTask(name, focus) {
  if (name === state.selected) {
    if (focus) focusTask(name);
    return;
  }
  if (state.selected) state.drafts.set(state.selected, $('draft').value);
  state.selected = name;
  $('draft').value = state.drafts.get(name) || '';
  state.drafts.delete(name);
  state.attempt = null;
  state.followCurrent = true;
  $('message').textContent = '';
  stopFollowing();
  render();
  loadReview(name);
  loadQuestions(name);
  loadPlanRequests(name);
  if (focus) focusTask(name);
  history.replaceState(null, '', '#' + encodeURIComponent(name));
}

function focusTask(name) {
  const b = $('task-list').querySelector(`button[data-task="${CSS.escape(name)}"]`);
  if (b) b.focus();
}

function selectAttempt(id, byPerson) {
  state.attempt = id;
  const st = selectedTask();
  const current = st && st.attempts.find((a) => a.current);
  state.followCurrent = !byPerson || (current && current.id === id);
  render();
}

// markCurrent marks one element of a list as the selected one, for
// assistive technology and for the eye alike (the style keys on it).
function markCurrent(elements, isSelected) {
  for (const e of elements) {
    if (isSelected(e)) e.setAttribute('aria-current', 'true');
    else e.removeAttribute('aria-current');
  }
}

// ---- Rendering ----

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'className') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// labelClass gives a label its colour; the label's own words always say
// the same thing, so colour is never the only signal.
function labelClass(a) {
  if (!a) return 'badge';
  const l = a.label || '';
  if (l.startsWith('Needs restart')) return 'badge s-restart';
  if (l.startsWith('Stopping')) return 'badge s-stopping';
  return 'badge s-' + a.state;
}

function statusClass(status) {
  return 'badge t-' + String(status).replace(/\s+/g, '-');
}

function elapsedOf(a) {
  if (a.elapsedMs !== null && a.elapsedMs !== undefined) return a.elapsedMs;
  if (a.startedAt && (a.state === 'running' || a.state === 'pending')) {
    return Math.max(0, Date.now() - Date.parse(a.startedAt));
  }
  return null;
}

function duration(ms) {
  if (ms === null) return '—';
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min ' + String(s % 60).padStart(2, '0') + ' s';
  return Math.floor(m / 60) + ' h ' + String(m % 60).padStart(2, '0') + ' min';
}

function tokens(u) {
  return u ? (u.inputTokens + u.outputTokens).toLocaleString() : '—';
}

function cost(u) {
  return u ? '$' + u.costUsd.toFixed(u.costUsd < 1 ? 4 : 2) : '—';
}

function usage(u) {
  return u ? tokens(u) + ' tok · ' + cost(u) : '—';
}

function shortId(id) {
  return id.slice(0, 8);
}

function render() {
  renderHeader();
  renderBanner();
  renderTaskList();
  renderDetail();
}

function renderHeader() {
  $('demo-badge').hidden = !state.demo;
}

function renderBanner() {
  const b = $('banner');
  b.hidden = !state.shuttingDown;
  b.textContent = state.shuttingDown ? 'The review server is shutting down.' : '';
}

// keepFocus re-renders a part of the page without losing the person's
// place: the focused element is found again by its key.
function keepFocus(container, draw) {
  const active = document.activeElement;
  const key = active && container.contains(active) ? active.dataset.key : null;
  draw();
  if (key) {
    const again = container.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (again) again.focus();
  }
}

// redraw draws a part of the page again only when what it shows changed
// (key), so that a poll bringing nothing new does not replace a button
// under the person's pointer.
const drawn = new WeakMap(); // element → the key it was drawn for

function redraw(container, key, draw) {
  if (drawn.get(container) === key) return;
  drawn.set(container, key);
  keepFocus(container, draw);
}

function renderTaskList() {
  const list = $('task-list');
  $('no-tasks').hidden = state.order.length > 0;
  const key = JSON.stringify([state.selected, state.order.map((name) => {
    const st = state.tasks.get(name);
    return [name, st.task.status, st.label, st.attempts.length, st.usage];
  })]);
  redraw(list, key, () => {
    list.replaceChildren(...state.order.map((name) => {
      const st = state.tasks.get(name);
      const current = st.attempts.find((a) => a.current);
      return el('li', {},
        el('button', { type: 'button', className: 'task', dataset: { task: name, key: 'task:' + name }, onclick: () => selectTask(name, false) },
          el('span', { className: 'task-title' }, name),
          el('span', { className: statusClass(st.task.status) }, st.task.status),
          current ? el('span', { className: labelClass(current) + ' small', title: st.label || current.label }, st.label || current.label) : el('span', { className: 'muted small' }, 'no attempt yet'),
          st.usage ? el('span', { className: 'muted small' }, usage(st.usage)) : null));
    }));
    markCurrent(list.querySelectorAll('button.task'), (b) => b.dataset.task === state.selected);
  });
}

function renderDetail() {
  const st = selectedTask();
  $('pick-task').hidden = !!st;
  $('task-view').hidden = !st;
  if (!st) return;
  $('task-name').textContent = st.name;
  $('task-repo').textContent = st.repository;
  const status = $('task-status');
  status.textContent = st.task.status + (st.task.cancelRequested ? ' (cancel requested)' : '');
  status.className = statusClass(st.task.status);
  $('task-version').textContent = String(st.stateVersion);
  $('task-usage').textContent = usage(st.usage);
  renderTaskActions(st);
  reviewIfMoved(st);
  renderReview();
  renderQuestions();
  renderSuggestions();
  renderAttempts(st);
  renderAttemptDetail(st);
}

function actionButton(action, label, attemptId, cls) {
  return el('button', {
    type: 'button', className: cls || '', dataset: { action, key: 'action:' + action + ':' + (attemptId || '') },
    onclick: (ev) => {
      ev.stopPropagation();
      runnerAction(action, attemptId);
    },
  }, label);
}

// active reports whether the task's current attempt is still on its way.
function active(st) {
  const a = st.attempts.find((x) => x.current);
  return !!a && (a.state === 'pending' || a.state === 'running');
}

function renderTaskActions(st) {
  const box = $('task-actions');
  const review = state.reviews.get(st.name);
  const merge = review ? review.merge : null;
  // Every offer is the server's (GET /api/runner): the Store's own check
  // of the action at the versions it read. A click still sends the
  // versions the person saw, so Merge and Approve continuation wait for
  // the review they were seen in.
  const mergeable = st.mergeable && !!review;
  const approvable = st.continuationApprovable && !!review;
  const key = JSON.stringify([st.name, st.startable, st.resumable, st.taskCancellable, st.unresolved, st.available, st.task.status, active(st), st.checkpoint, st.nextItem, st.continuationRefusal, merge, mergeable, approvable]);
  redraw(box, key, () => {
    const buttons = [];
    const cp = st.checkpoint;
    if (mergeable) {
      buttons.push(el('button', { type: 'button', className: 'primary', dataset: { action: 'merge', key: 'action:merge' }, onclick: mergeTask }, 'Merge'));
    }
    if (approvable) {
      buttons.push(el('button', { type: 'button', className: 'primary', dataset: { action: 'approve-continuation', key: 'action:approve-continuation' }, onclick: approveContinuation }, 'Approve continuation'));
    }
    if (st.startable) buttons.push(actionButton('start', 'Start', null, 'primary'));
    if (st.resumable) buttons.push(actionButton('resume', 'Resume', null, 'primary'));
    if (st.taskCancellable) buttons.push(actionButton('cancel-task', 'Cancel task', null, 'danger'));
    box.replaceChildren(...buttons);
    if (merge) box.append(mergeNote(merge));
    const note = cp && checkpointNote(st, cp);
    if (note) box.append(note);
    if (cp && st.continuationRefusal && st.task.status === 'needs amendment') {
      box.append(el('span', { className: 'muted', dataset: { continuationRefusal: '' } }, 'Not approvable yet: ' + st.continuationRefusal));
    }
    if (st.unresolved) {
      box.append(el('span', { className: 'note' }, 'Needs a restart of codeboost before anything else runs for this task.'));
    } else if (!st.available && !active(st) && !closedStatuses.has(st.task.status)) {
      box.append(el('span', { className: 'muted' }, 'The runner is busy or closed to new work.'));
    }
  });
  $('send-guidance').hidden = !st.guidance;
}

let reviewDrawn = null; // the review object drawn last

function renderReview() {
  const st = selectedTask();
  const review = st && state.reviews.get(st.name);
  const list = $('plan-items');
  if (!review) {
    reviewDrawn = null;
    list.replaceChildren(el('li', { className: 'muted' }, 'Loading the plan…'));
    return;
  }
  if (review === reviewDrawn) return;
  reviewDrawn = review;
  $('plan-revision').textContent = 'revision ' + review.revision;
  $('plan-empty').hidden = review.items.length > 0;
  redraw(list, review, () => {
    list.replaceChildren(...review.items.map((it) => {
      // A question's note shows in the Questions panel, with its answer.
      const notes = review.notes.filter((n) => n.item === it.item && n.revision === review.revision && !n.question);
      return el('li', { dataset: { item: String(it.item) } },
        el('div', { className: 'item-line' },
          el('span', { className: 'item-title' }, it.title),
          it.staleApproval
            ? el('span', { className: 'badge s-stale small', title: 'The run would not accept this approval: a choice was saved after it, or the code it was given for changed.' }, 'Stale')
            : null,
          it.approved
            ? el('span', { className: 'badge s-completed small' }, 'Approved')
            : el('button', { type: 'button', dataset: { action: 'approve', item: String(it.item), key: 'approve:' + it.item }, onclick: () => approve(it.item) },
              it.staleApproval ? 'Approve again' : 'Approve')),
        notes.length ? el('ul', { className: 'notes' }, notes.map((n) => el('li', {}, n.text))) : null);
    }));
  });
  const select = $('draft-item');
  const chosen = select.value;
  select.replaceChildren(el('option', { value: '' }, 'the whole plan'),
    ...review.items.map((it) => el('option', { value: String(it.item) }, 'item ' + it.item + ': ' + it.title)));
  select.value = review.items.some((it) => String(it.item) === chosen) ? chosen : '';
  const qSelect = $('question-item');
  const qChosen = qSelect.value;
  qSelect.replaceChildren(el('option', { value: '' }, 'the whole plan'),
    ...review.items.map((it) => el('option', { value: String(it.item) }, 'item ' + it.item + ': ' + it.title)));
  qSelect.value = review.items.some((it) => String(it.item) === qChosen) ? qChosen : '';
}

// ---- Questions (Ask) ----

// A question is answered by a read-only agent, two at a time. The screen
// asks the server for the task's questions when a task is selected, after
// it asks one, and at each poll while one is still on its way.

const questionWords = { pending: 'waiting', running: 'answering', completed: 'answered', failed: 'not answered' };

// sentence ends a reason with a full stop, so that advice can follow it.
function sentence(s) {
  return /[.!?…]$/.test(s) ? s : s + '.';
}

function questionsInFlight(name) {
  const qs = state.questions.get(name);
  return !qs || qs.some((q) => q.state === 'pending' || q.state === 'running');
}

const questionsLoading = new Set();

// loadQuestions reads the task's questions. A poll (polling) is not sent
// while another load is on its way; a load after a selection or an action
// always is, since the one on its way may have been computed before it.
async function loadQuestions(name, polling) {
  if (polling && questionsLoading.has(name)) return;
  questionsLoading.add(name);
  const n = questionLoads.next(name);
  try {
    const reply = await getJSON('/api/questions?task=' + encodeURIComponent(name));
    if (!questionLoads.take(name, n)) return;
    state.questions.set(name, reply.questions);
    if (name === state.selected) renderQuestions();
  } catch (err) {
    if (name === state.selected) {
      $('question-list').replaceChildren(el('li', { className: 'error' }, 'The questions could not be read: ' + err.message));
    }
  } finally {
    questionsLoading.delete(name);
  }
}

function renderQuestions() {
  const st = selectedTask();
  const list = $('question-list');
  const qs = st ? state.questions.get(st.name) : null;
  $('no-questions').hidden = !qs || qs.length > 0;
  if (!qs) return;
  redraw(list, JSON.stringify(qs), () => {
    list.replaceChildren(...qs.map((q) => el('li', { dataset: { question: q.id, state: q.state } },
      el('div', { className: 'q-line' },
        el('span', { className: 'q-text' }, (q.item ? 'Item ' + q.item + ': ' : '') + q.text),
        el('span', { className: 'badge small s-' + q.state }, questionWords[q.state] || q.state)),
      q.answer ? el('p', { className: 'q-answer' }, q.answer) : null,
      q.state === 'failed' ? el('p', { className: 'q-reason' }, sentence(q.reason) + (q.retryable ? ' You can ask again.' : '')) : null,
      q.state === 'failed' && q.retryable
        ? el('button', { type: 'button', dataset: { key: 'ask-again:' + q.id }, onclick: () => askAgain(q) }, 'Ask again')
        : null)));
  });
}

// askAgain puts a question that was not answered back in the box, for the
// person to send (a new question: the old one stays as it ended).
function askAgain(q) {
  $('question').value = q.text;
  $('question-item').value = q.item ? String(q.item) : '';
  $('question').focus();
}

async function askQuestion() {
  const st = selectedTask();
  if (!st) return;
  const text = $('question').value;
  if (!text.trim()) {
    $('message').className = 'message error';
    $('message').textContent = 'Write a question first.';
    $('question').focus();
    return;
  }
  const body = { task: st.name, text };
  if ($('question-item').value) body.item = Number($('question-item').value);
  const reply = await report('Ask', () => act('/api/questions', body));
  if (reply) {
    if ($('question').value === text) $('question').value = '';
    loadQuestions(st.name);
  }
}

// ---- Suggestions (the planning agent) ----

// A suggestion is a set of cards (add, change or remove an item), a draft
// a whole next revision; both are planned from the revision shown and
// apply only to it. Nothing changes until the person applies one; a new
// revision or snapshot puts every other request out of date, and it stays
// listed with its cause.

const planRoutes = { suggestion: '/api/plan/suggestions/', draft: '/api/plan/drafts/' };
const planStateWords = {
  pending: 'planning…', ready: 'ready', consumed: 'applied', failed: 'failed',
  cancelled: 'dismissed', invalidated: 'out of date',
};
const planStateClass = {
  pending: 's-running', ready: 's-completed', consumed: 's-completed', failed: 's-failed',
  cancelled: 's-cancelled', invalidated: 's-stale',
};

function planRequestsInFlight(name) {
  const reply = state.planRequests.get(name);
  return reply !== null && (!reply || reply.requests.some((r) => r.state === 'pending'));
}

const planRequestsLoading = new Set();

// loadPlanRequests reads the plan's planning requests, polling as
// loadQuestions does.
async function loadPlanRequests(name, polling) {
  if (polling && planRequestsLoading.has(name)) return;
  planRequestsLoading.add(name);
  const n = planRequestLoads.next(name);
  try {
    const reply = await getJSON('/api/plan/requests?task=' + encodeURIComponent(name));
    if (!planRequestLoads.take(name, n)) return;
    state.planRequests.set(name, reply);
    if (name === state.selected) renderSuggestions();
  } catch (err) {
    if (err.status === 404 && err.code !== 'not-found') {
      state.planRequests.set(name, null); // the server has no planning routes
      if (name === state.selected) renderSuggestions();
    } else if (name === state.selected) {
      $('suggestion-list').replaceChildren(el('li', { className: 'error' }, 'The suggestions could not be read: ' + err.message));
    }
  } finally {
    planRequestsLoading.delete(name);
  }
}

function cardLine(c) {
  const kind = { add: 'Add', change: 'Change item ' + c.item, remove: 'Remove item ' + c.item }[c.kind] || c.kind;
  return el('li', { dataset: { kind: c.kind } },
    el('span', { className: 'card-kind' }, kind + ':'),
    el('span', { className: 'card-title' }, c.title),
    c.instructions ? el('span', { className: 'card-text' }, c.instructions) : null);
}

// replyOf is what a ready (or applied, or out-of-date) request proposes:
// a suggestion's cards, a draft's items.
function replyOf(r) {
  if (!r.reply) return null;
  if (r.mode === 'draft') {
    return el('ol', { className: 'cards draft-items' }, (r.reply.items || []).map((it) =>
      el('li', {}, el('span', { className: 'card-title' }, it.title),
        it.instructions ? el('span', { className: 'card-text' }, it.instructions) : null)));
  }
  return el('ul', { className: 'cards' }, r.reply.map(cardLine));
}

function renderSuggestions() {
  const st = selectedTask();
  const reply = st ? state.planRequests.get(st.name) : undefined;
  $('suggestions').hidden = reply === null;
  const list = $('suggestion-list');
  $('no-suggestions').hidden = !reply || reply.requests.length > 0;
  if (!reply) return;
  const busy = reply.requests.some((r) => r.state === 'pending');
  $('ask-suggestions').disabled = busy;
  $('ask-draft').disabled = busy;
  redraw(list, JSON.stringify(reply), () => {
    list.replaceChildren(...reply.requests.slice().reverse().map((r) => {
      const title = r.mode === 'draft'
        ? 'Draft of revision ' + (r.revision + 1)
        : 'Suggestions for revision ' + r.revision;
      let reason = null;
      if (r.state === 'invalidated') reason = 'Out of date: ' + r.cause;
      else if ((r.state === 'failed' || r.state === 'cancelled') && r.reason) reason = sentence(r.reason);
      return el('li', { dataset: { request: r.id, state: r.state, mode: r.mode } },
        el('div', { className: 's-line' },
          el('span', { className: 's-title' }, title),
          el('span', { className: 'badge small ' + (planStateClass[r.state] || '') }, planStateWords[r.state] || r.state)),
        reason ? el('p', { className: 's-reason' }, reason) : null,
        r.state === 'ready' || r.state === 'consumed' ? replyOf(r) : null,
        r.state === 'ready'
          ? el('div', { className: 'row buttons' },
            el('button', { type: 'button', dataset: { action: 'apply', key: 'apply:' + r.id }, onclick: () => applyPlanRequest(r) },
              r.mode === 'draft' ? 'Apply as revision ' + (r.revision + 1) : 'Apply'),
            el('button', { type: 'button', className: 'quiet', dataset: { action: 'dismiss', key: 'dismiss:' + r.id }, onclick: () => cancelPlanRequest(r, 'Dismiss') }, 'Dismiss'))
          : null,
        r.state === 'pending'
          ? el('button', { type: 'button', className: 'quiet', dataset: { action: 'cancel', key: 'cancel:' + r.id }, onclick: () => cancelPlanRequest(r, 'Cancel') }, 'Cancel')
          : null);
    }));
  });
}

// askPlanning starts a request for the revision and snapshot shown.
async function askPlanning(mode) {
  const st = selectedTask();
  const shown = st && state.planRequests.get(st.name);
  if (!shown) return;
  const what = mode === 'draft' ? 'Ask for a draft' : 'Ask for suggestions';
  await report(what, () => act(mode === 'draft' ? '/api/plan/drafts' : '/api/plan/suggestions',
    { task: st.name, expectedRevision: shown.revision, expectedSnapshot: shown.snapshotId }));
  loadPlanRequests(st.name);
}

// applyPlanRequest applies a ready request to the revision it is bound to
// (never the one shown, which may have moved): the server refuses it then.
async function applyPlanRequest(r) {
  const st = selectedTask();
  if (!st) return;
  const reply = await report('Apply', () => act(planRoutes[r.mode] + r.id + '/apply', { task: st.name, expectedRevision: r.revision }));
  loadPlanRequests(st.name);
  if (reply) loadReview(st.name);
}

async function cancelPlanRequest(r, what) {
  const st = selectedTask();
  if (!st) return;
  await report(what, () => act(planRoutes[r.mode] + r.id + '/cancel', { task: st.name }));
  loadPlanRequests(st.name);
}

function renderAttempts(st) {
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

function renderAttemptDetail(st) {
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

function stopFollowing() {
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

// selectInitial selects the task the address names (#name), else the
// first one.
function selectInitial() {
  const wanted = decodeURIComponent(location.hash.slice(1));
  selectTask(state.order.includes(wanted) ? wanted : state.order[0], false);
}

tick();
