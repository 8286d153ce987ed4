// suggestions.js: the Suggestions panel (the planning agent): the plan's
// planning requests, what a ready one proposes, asking, applying and
// dismissing one, loaded under rule 1 (planRequestLoads, a loadOrder).

import { $, el, redraw } from './dom.js';
import { sentence } from './format.js';
import { loadOrder, selectedTask, state } from './state.js';
import { act, getJSON, report } from './net.js';
import { loadReview } from './review.js';

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

export function planRequestsInFlight(name) {
  const reply = state.planRequests.get(name);
  return reply !== null && (!reply || reply.requests.some((r) => r.state === 'pending'));
}

const planRequestLoads = loadOrder();

// loadPlanRequests reads the plan's planning requests, polling as
// loadQuestions does.
export async function loadPlanRequests(name, polling) {
  if (polling && planRequestLoads.busy(name)) return;
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
    planRequestLoads.done(name);
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

export function renderSuggestions() {
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
export async function askPlanning(mode) {
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
