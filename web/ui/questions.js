// questions.js: the Questions panel (Ask): the task's questions and their
// answers, loaded under rule 1 (questionLoads, a loadOrder), and asking
// one, whose box clears only if it still holds what was sent (rule 3).

import { $, el, redraw } from './dom.js';
import { sentence } from './format.js';
import { loadOrder, selectedTask, state } from './state.js';
import { act, getJSON, report } from './net.js';

// A question is answered by a read-only agent, two at a time. The screen
// asks the server for the task's questions when a task is selected, after
// it asks one, and at each poll while one is still on its way.

const questionWords = { pending: 'waiting', running: 'answering', completed: 'answered', failed: 'not answered' };

export function questionsInFlight(name) {
  const qs = state.questions.get(name);
  return !qs || qs.some((q) => q.state === 'pending' || q.state === 'running');
}

const questionLoads = loadOrder();

// loadQuestions reads the task's questions. A poll (polling) is not sent
// while another load is on its way; a load after a selection or an action
// always is, since the one on its way may have been computed before it.
export async function loadQuestions(name, polling) {
  if (polling && questionLoads.busy(name)) return;
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
    questionLoads.done(name);
  }
}

export function renderQuestions() {
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

export async function askQuestion() {
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
