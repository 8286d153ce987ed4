// tasks.js: the task list and the selected task: selection (rule 5's
// aria-current on the task list, through markCurrent), the task's action
// buttons the server offers (renderTaskActions, actionButton, which the
// attempt rows use too), the merge note and Merge, the checkpoint note and
// Approve continuation.

import { $, el, markCurrent, redraw } from './dom.js';
import { labelClass, statusClass, usage } from './format.js';
import { selectedTask, state } from './state.js';
import { act, report } from './net.js';
import { render } from './render.js';
import { stopFollowing } from './attempts.js';
import { loadReview } from './review.js';
import { loadQuestions } from './questions.js';
import { loadPlanRequests } from './suggestions.js';

const closedStatuses = new Set(['merged', 'cancelled']);

// ---- Task list ----

export function renderTaskList() {
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

// ---- Selection (rule 5) ----

export function selectTask(name, focus) {
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

// selectInitial selects the task the address names (#name), else the
// first one.
export function selectInitial() {
  const wanted = decodeURIComponent(location.hash.slice(1));
  selectTask(state.order.includes(wanted) ? wanted : state.order[0], false);
}

// ---- The task's actions ----

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

export function actionButton(action, label, attemptId, cls) {
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

export function renderTaskActions(st) {
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

// ---- Merge and scope checkpoints ----

const mergeWords = {
  submitting: 'Merging…', queued: 'In the merge queue', merged: 'Merged',
  removed: 'Left the merge queue', failed: 'Not merged',
};

export function mergeInFlight(m) {
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
