// The dashboard's shell: sign-in when the server wants a token, the sidebar and header, hash routing
// (#/memories, #/memory/mem_12, #/add, #/profile, #/log, #/stats, #/transfer), toasts and the
// confirm dialog the views share.
import { call, getToken, onUnauthorized, setToken } from './api.js';
import { clear, errorState, errorText, h, icon, joinMessage } from './dom.js';
import { getLang, LANGS, setLang, t } from './i18n.js';
import * as add from './views/add.js';
import * as detail from './views/detail.js';
import * as log from './views/log.js';
import * as memories from './views/memories.js';
import * as profile from './views/profile.js';
import * as stats from './views/stats.js';
import * as transfer from './views/transfer.js';

const ROUTES = [
  { name: 'memories', pattern: /^\/memories$/, view: memories, nav: true },
  { name: 'memory', pattern: /^\/memory\/([^/]+)$/, view: detail, parent: 'memories' },
  { name: 'add', pattern: /^\/add$/, view: add, nav: true },
  { name: 'profile', pattern: /^\/profile$/, view: profile, nav: true },
  { name: 'log', pattern: /^\/log$/, view: log, nav: true },
  { name: 'stats', pattern: /^\/stats$/, view: stats, nav: true },
  { name: 'transfer', pattern: /^\/transfer$/, view: transfer, nav: true },
];

const root = document.getElementById('app');
const ctx = {
  info: null,
  navigate(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
  toast,
  confirm,
  setTitle(text) {
    const title = document.querySelector('[data-testid="page-title"]');
    if (title) title.textContent = text;
    document.title = `${text} · ${t('app.name')}`;
  },
};

function langSwitch() {
  const select = h('select', { 'data-testid': 'lang-switch', 'aria-label': t('app.language'), class: 'lang' },
    LANGS.map((code) => h('option', { value: code, selected: code === getLang() }, t(`lang.${code}`))));
  select.addEventListener('change', () => {
    setLang(select.value);
    start();
  });
  return select;
}

function shell() {
  clear(root);
  const nav = h('nav', { class: 'nav', 'aria-label': t('app.nav') },
    ROUTES.filter((r) => r.nav).map((r) =>
      h('a', { href: `#/${r.name}`, class: 'nav-link', 'data-testid': `nav-${r.name}`, 'data-route': r.name },
        icon(r.name), h('span', {}, t(`nav.${r.name}`)))));
  const namespace = ctx.info.namespace;
  const signOut = ctx.info.auth
    ? h('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'sign-out', onclick: () => signIn() },
      t('auth.sign_out'))
    : null;
  root.append(
    h('div', { class: 'layout' },
      h('aside', { class: 'sidebar' },
        h('a', { class: 'brand', href: '#/memories' },
          h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, '記'),
          h('span', {}, h('strong', {}, t('app.name')), h('small', {}, t('app.tagline')))),
        nav,
        h('div', { class: 'sidebar-foot' },
          h('div', { 'data-testid': 'namespace' }, t('app.namespace'), ' ',
            h('code', {}, namespace ? namespace : t('app.default_namespace'))),
          h('div', { class: 'muted' }, `v${ctx.info.version}`))),
      h('div', { class: 'main' },
        h('header', { class: 'topbar' },
          h('h1', { 'data-testid': 'page-title' }, ''),
          h('div', { class: 'topbar-tools' }, langSwitch(), signOut)),
        h('main', { id: 'view', class: 'view', tabindex: '-1' }))),
    h('div', { class: 'toasts', 'aria-live': 'polite', 'data-testid': 'toasts' }),
    confirmDialog(),
  );
}

function route() {
  const view = document.getElementById('view');
  if (!view) return;
  const path = location.hash.replace(/^#/, '') || '/memories';
  const found = ROUTES.map((r) => ({ r, m: r.pattern.exec(path) })).find((x) => x.m);
  if (!found) {
    location.replace('#/memories');
    return;
  }
  const active = found.r.parent || found.r.name;
  for (const link of document.querySelectorAll('.nav-link')) {
    const on = link.dataset.route === active;
    link.classList.toggle('active', on);
    if (on) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const container = h('div', { class: 'page', 'data-testid': `page-${found.r.name}` });
  clear(view).append(container);
  ctx.setTitle(t(`title.${found.r.name}`));
  found.r.view.render(ctx, container, found.m.slice(1).map(decoded));
}

/** A route's part as typed: a broken %-escape stays as it is (the server then says it is not found). */
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function toast(message, kind = 'ok') {
  const box = document.querySelector('[data-testid="toasts"]');
  if (!box) return;
  const item = h('div', { class: `toast toast-${kind}`, 'data-testid': 'toast', role: kind === 'error' ? 'alert' : 'status' },
    h('span', {}, message),
    h('button', { type: 'button', class: 'toast-close', 'aria-label': t('common.close'), onclick: () => item.remove() }, '×'));
  box.append(item);
  setTimeout(() => item.remove(), kind === 'error' ? 10000 : 6000);
}

let pendingConfirm = null;

function confirmDialog() {
  const dialog = h('dialog', { class: 'dialog', 'data-testid': 'confirm-dialog', 'aria-labelledby': 'confirm-title' },
    h('form', { method: 'dialog' },
      h('h2', { id: 'confirm-title', 'data-testid': 'confirm-title' }),
      h('p', { 'data-testid': 'confirm-message' }),
      h('div', { class: 'dialog-actions' },
        h('button', { value: 'cancel', class: 'btn', 'data-testid': 'confirm-cancel' }, t('common.cancel')),
        h('button', { value: 'ok', class: 'btn btn-danger', 'data-testid': 'confirm-ok' }, t('common.delete')))));
  dialog.addEventListener('close', () => {
    if (pendingConfirm) pendingConfirm(dialog.returnValue === 'ok');
    pendingConfirm = null;
  });
  return dialog;
}

function confirm({ title, message, ok }) {
  const dialog = document.querySelector('[data-testid="confirm-dialog"]');
  dialog.querySelector('[data-testid="confirm-title"]').textContent = title;
  dialog.querySelector('[data-testid="confirm-message"]').textContent = message;
  dialog.querySelector('[data-testid="confirm-ok"]').textContent = ok || t('common.delete');
  dialog.returnValue = '';
  return new Promise((resolve) => {
    pendingConfirm = resolve;
    dialog.showModal();
    dialog.querySelector('[data-testid="confirm-cancel"]').focus();
  });
}

/** A 401 in our words (by the gate's error code), then the server's own description. */
function rejection(problem) {
  const head = (problem.code && t(`auth.code_${problem.code}`, {}, null)) || t('auth.rejected');
  return problem.message ? joinMessage(head, problem.message) : head.replace(/[:：]$/, '');
}

function signIn(problem) {
  setToken(null);
  clear(root);
  const input = h('input', { type: 'password', id: 'token', 'data-testid': 'signin-token', autocomplete: 'current-password',
    required: true, spellcheck: 'false' });
  const error = h('p', { class: 'alert alert-error', 'data-testid': 'signin-error', role: 'alert', hidden: !problem },
    problem ? rejection(problem) : '');
  const button = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'signin-submit' }, t('auth.sign_in'));
  const form = h('form', { class: 'signin card', 'data-testid': 'signin-form' },
    h('div', { class: 'signin-head' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, '記'),
      h('div', {}, h('h1', {}, t('auth.title')), h('p', { class: 'muted' }, t('auth.explain')))),
    h('div', { class: 'field' }, h('label', { for: 'token' }, t('auth.token')), input),
    error,
    h('div', { class: 'signin-foot' }, langSwitch(), button));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) {
      input.focus();
      return;
    }
    button.disabled = true;
    setToken(token);
    try {
      await call('/memories', { query: { limit: 1 }, quiet401: true });
      start();
    } catch (problemNow) {
      setToken(null);
      error.hidden = false;
      error.textContent = problemNow.status === 401 ? rejection(problemNow) : errorText(problemNow);
      button.disabled = false;
      input.select();
    }
  });
  root.append(h('div', { class: 'signin-page' }, form));
  input.focus();
}

// Each start (the page opening, a sign-in, a language switch) supersedes the ones before, and a
// sign-in supersedes every start under way: an answer asked without the new token must not sign out.
let starts = 0;

async function start() {
  const mine = ++starts;
  const token = getToken();
  // Superseded meanwhile: a later start, or a sign-in under way (the token changed).
  const stale = () => mine !== starts || token !== getToken();
  document.documentElement.lang = getLang() === 'zh' ? 'zh-CN' : 'en';
  let info;
  try {
    info = await call('/info');
  } catch (error) {
    if (!stale()) clear(root).append(h('div', { class: 'signin-page' }, errorState(error, start)));
    return;
  }
  if (stale()) return;
  ctx.info = info;
  if (ctx.info.auth && (!getToken() || ctx.info.namespace === null)) {
    signIn(getToken() ? { status: 401, code: 'invalid_token', message: '' } : null);
    return;
  }
  shell();
  route();
}

onUnauthorized((error) => signIn(error));
window.addEventListener('hashchange', route);
start();
