// render.js: render, which draws the whole page from the state: the
// header, the shutdown banner, the task list and the selected task's view,
// each panel by its own module. No UI rule lives here.

import { $ } from './dom.js';
import { statusClass, usage } from './format.js';
import { selectedTask, state } from './state.js';
import { renderTaskActions, renderTaskList } from './tasks.js';
import { renderAttemptDetail, renderAttempts } from './attempts.js';
import { renderReview, reviewIfMoved } from './review.js';
import { renderQuestions } from './questions.js';
import { renderSuggestions } from './suggestions.js';

export function render() {
  renderHeader();
  renderBanner();
  renderTaskList();
  renderDetail();
}

function renderHeader() {
  $('demo-badge').hidden = !state.demo;
}

export function renderBanner() {
  const b = $('banner');
  b.hidden = !state.shuttingDown;
  b.textContent = state.shuttingDown ? 'The review server is shutting down.' : '';
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
