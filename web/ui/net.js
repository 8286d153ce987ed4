// net.js: requests to the server. getJSON and getText; act, one user
// action sent with its actionId and resent unchanged after a lost response
// (rule 6); report, which says in the message line how an action went; and
// the request numbering (sent) that rule 1 compares poll answers and
// action replies by.

import { $ } from './dom.js';
import { applyActionStatus, userActed } from './poll.js';
import { render } from './render.js';

// A lost action response is resent this many times, after these pauses.
const resendPauses = [250, 500, 1000, 2000];
// A request that has not answered after this long is given up (its answer
// could only be older than the next one's anyway).
const requestTimeout = 30000;

// Requests that carry a task's status are numbered as they are sent (rule 1).
export let sent = 0;

// nextRequest numbers a request as it is sent. Another module reads sent
// but cannot assign it.
export function nextRequest() {
  return ++sent;
}

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

export async function getJSON(url) {
  const { res, text } = await fetchText(url);
  const reply = parse(text);
  if (!res.ok || reply === null) throw errorOf(res, text, reply);
  return reply;
}

export async function getText(url) {
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
export async function act(url, body) {
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

// report runs an action and says how it went in the message line.
export async function report(what, run, after) {
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
