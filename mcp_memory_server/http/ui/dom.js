// Building the page without innerHTML: every text, and above all every memory's text, goes in as a
// text node, so nothing a memory says can become markup.
import { getLang, t } from './i18n.js';

/** h('button', {class: 'btn', 'data-testid': 'x', onclick: fn}, 'text', child...) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'class') {
      el.className = value;
    } else if (name === 'value') {
      el.value = value;
    } else if (name === 'checked' || name === 'disabled' || name === 'selected' || name === 'hidden') {
      el[name] = Boolean(value);
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function locale() {
  return getLang() === 'zh' ? 'zh-CN' : 'en-US';
}

export function fmtDate(iso) {
  if (!iso) return t('common.never');
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return new Intl.DateTimeFormat(locale(), { dateStyle: 'medium', timeStyle: 'short' }).format(date);
}

export function fmtNum(value, digits = 2) {
  if (typeof value !== 'number') return '–';
  return value.toLocaleString(locale(), { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function fmtInt(value) {
  return typeof value === 'number' ? value.toLocaleString(locale()) : '–';
}

export function fmtBytes(bytes) {
  if (typeof bytes !== 'number') return '–';
  const units = ['B', 'KB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toLocaleString(locale(), { maximumFractionDigits: unit ? 1 : 0 })} ${units[unit]}`;
}

/** The category's translated name, or the name itself for a category of the user's own. */
export function categoryLabel(name) {
  const key = `category.${name}`;
  const label = t(key, {}, null);
  return label ?? name;
}

export function categoryBadge(name) {
  return h('span', { class: `badge badge-cat cat-${hue(name)}`, 'data-testid': 'category-badge', title: name },
    categoryLabel(name));
}

export function tierBadge(tier) {
  return h('span', { class: `badge badge-tier tier-${tier}`, 'data-testid': 'tier-badge' }, t(`tier.${tier}`));
}

export function sourceLabel(source) {
  return t(`source.${source}`, {}, null) ?? source;
}

function hue(name) {
  let sum = 0;
  for (const ch of name) sum = (sum * 31 + ch.codePointAt(0)) % 8;
  return sum;
}

/** A horizontal bar for a 0..1 value (width set from script, as the page's CSP allows). */
export function bar(value, testid) {
  const fill = h('span', { class: 'bar-fill' });
  fill.style.width = `${Math.max(0, Math.min(1, value)) * 100}%`;
  return h('span', { class: 'bar', 'data-testid': testid, role: 'presentation' }, fill);
}

export function spinner() {
  return h('div', { class: 'state state-loading', 'data-testid': 'loading', role: 'status' },
    h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('common.loading'));
}

/** Show a spinner, fetch, then draw what came back (`draw(data, reload)`); a failure, in the fetch or
 * the drawing, shows the error with a retry button, after what `before()` gives (a back link, say). */
export function loadInto(container, fetch, draw, before = () => []) {
  const load = async () => {
    clear(container).append(spinner());
    try {
      const data = await fetch();
      clear(container);
      draw(data, load);
    } catch (error) {
      clear(container).append(...before(), errorState(error, load));
    }
  };
  load();
}

export function errorState(error, retry) {
  return h('div', { class: 'state state-error', 'data-testid': 'error-state', role: 'alert' },
    h('strong', {}, t('common.error_title')),
    h('p', { 'data-testid': 'error-message' }, errorText(error)),
    retry ? h('button', { type: 'button', class: 'btn', 'data-testid': 'retry', onclick: retry }, t('common.retry')) : null);
}

export function emptyState(message, action) {
  return h('div', { class: 'state state-empty', 'data-testid': 'empty-state' },
    h('span', { class: 'empty-icon', 'aria-hidden': 'true' }, '∅'), h('p', {}, message), action || null);
}

/** What to show for a failed call: our words for the status, then the server's own message. */
export function errorText(error) {
  if (error && error.status !== undefined) {
    const head = t(`error.status_${error.status}`, {}, null) ?? t('error.status_other', { status: error.status });
    return error.message ? joinMessage(head, error.message) : head;
  }
  return t('error.network', { message: String(error && error.message ? error.message : error) });
}

/** "Not found: the server's words"; a Chinese full-width colon has its own space. */
export function joinMessage(head, message) {
  return /[：]$/.test(head) ? `${head}${message}` : `${head} ${message}`;
}

export function field(labelText, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  return h('div', { class: 'field' },
    h('label', { for: id }, labelText), control, hint ? h('small', { class: 'hint' }, hint) : null);
}

// Line icons (24x24, stroked), drawn as SVG so no font needs the glyphs.
const ICONS = {
  memories: ['M4 6h16', 'M4 12h16', 'M4 18h10'],
  add: ['M12 5v14', 'M5 12h14'],
  profile: ['M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8z', 'M4 20c1.5-3.5 4.5-5 8-5s6.5 1.5 8 5'],
  log: ['M4 5h16l-6 7v6l-4 2v-8z'],
  stats: ['M5 20V10', 'M12 20V4', 'M19 20v-7'],
  transfer: ['M7 4v14', 'M3 14l4 4 4-4', 'M17 20V6', 'M13 10l4-4 4 4'],
};

export function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', 'icon');
  svg.setAttribute('aria-hidden', 'true');
  for (const d of ICONS[name] || []) {
    const path = document.createElementNS(ns, 'path');
    path.setAttribute('d', d);
    svg.append(path);
  }
  return svg;
}
