// review.js: the plan panel: the plan's items and approvals (a stale
// approval marked), the feedback composer, whose drafts survive a
// response (rule 3), plan import, and loading the plan under rule 1
// (reviewLoads, a loadOrder).

import { $, el, redraw } from './dom.js';
import { loadOrder, selectedTask, state } from './state.js';
import { act, getJSON, report } from './net.js';
import { renderTaskActions } from './tasks.js';

// ---- Loading and drawing the plan (rule 1) ----

export const reviewLoads = loadOrder();

export async function loadReview(name) {
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
    reviewLoads.done(name);
  }
}

// reviewIfMoved reloads the plan when a status shows its review version
// moved (an approval or a note from another tab or person) or its context
// generation passed the plan's (an import, an applied suggestion or a new
// snapshot, which leave the review version as it was).
export function reviewIfMoved(st) {
  const review = state.reviews.get(st.name);
  if (!review || reviewLoads.busy(st.name)) return;
  if (review.reviewVersion !== st.reviewVersion || st.task.contextGeneration > review.contextGeneration) loadReview(st.name);
}

let reviewDrawn = null; // the review object drawn last

export function renderReview() {
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

// ---- Approvals, the feedback composer (rule 3) and plan import ----

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
export async function sendFeedback(kind) {
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

export async function importPlan() {
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
