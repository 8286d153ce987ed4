// dom.js: small DOM helpers shared by every panel: $ (an element by id),
// el (an element built from props and children, text never HTML), redraw
// and keepFocus (draw a part again only when it changed, keeping the
// focus), and markCurrent, which carries rule 5's aria-current.

export const $ = (id) => document.getElementById(id);

export function el(tag, props, ...children) {
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

export function redraw(container, key, draw) {
  if (drawn.get(container) === key) return;
  drawn.set(container, key);
  keepFocus(container, draw);
}

// markCurrent marks one element of a list as the selected one, for
// assistive technology and for the eye alike (the style keys on it).
export function markCurrent(elements, isSelected) {
  for (const e of elements) {
    if (isSelected(e)) e.setAttribute('aria-current', 'true');
    else e.removeAttribute('aria-current');
  }
}
