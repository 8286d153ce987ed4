// format.js: the words and classes the panels put on what the server
// sends (label and status colours, durations, tokens and cost, short IDs,
// a reason as a sentence). No UI rule lives here.

// labelClass gives a label its colour; the label's own words always say
// the same thing, so colour is never the only signal.
export function labelClass(a) {
  if (!a) return 'badge';
  const l = a.label || '';
  if (l.startsWith('Needs restart')) return 'badge s-restart';
  if (l.startsWith('Stopping')) return 'badge s-stopping';
  return 'badge s-' + a.state;
}

export function statusClass(status) {
  return 'badge t-' + String(status).replace(/\s+/g, '-');
}

export function elapsedOf(a) {
  if (a.elapsedMs !== null && a.elapsedMs !== undefined) return a.elapsedMs;
  if (a.startedAt && (a.state === 'running' || a.state === 'pending')) {
    return Math.max(0, Date.now() - Date.parse(a.startedAt));
  }
  return null;
}

export function duration(ms) {
  if (ms === null) return '—';
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min ' + String(s % 60).padStart(2, '0') + ' s';
  return Math.floor(m / 60) + ' h ' + String(m % 60).padStart(2, '0') + ' min';
}

export function tokens(u) {
  return u ? (u.inputTokens + u.outputTokens).toLocaleString() : '—';
}

export function cost(u) {
  return u ? '$' + u.costUsd.toFixed(u.costUsd < 1 ? 4 : 2) : '—';
}

export function usage(u) {
  return u ? tokens(u) + ' tok · ' + cost(u) : '—';
}

export function shortId(id) {
  return id.slice(0, 8);
}

// sentence ends a reason with a full stop, so that advice can follow it.
export function sentence(s) {
  return /[.!?…]$/.test(s) ? s : s + '.';
}
