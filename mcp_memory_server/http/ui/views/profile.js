// The user's profile as the server synthesised it, and manual edits: set the summary and the language
// preference, add and remove items of the lists. Manual items are marked; synthesis keeps them.
import { call } from '../api.js';
import { clear, errorText, fmtDate, h, loadInto } from '../dom.js';
import { t } from '../i18n.js';

const TEXTS = ['summary', 'language_preferences'];
const LISTS = ['domains', 'high_value_signals', 'low_value_signals', 'active_projects'];

export function render(ctx, container) {
  loadInto(container, () => call('/profile'), (profile) => show(ctx, container, profile));
}

function show(ctx, container, profile) {
  const redraw = (next) => {
    clear(container);
    show(ctx, container, next);
  };

  async function edit(field, action, text) {
    try {
      const next = await call('/profile', { method: 'POST', body: { field, action, text } });
      ctx.toast(t(`profile.done_${action}`, { field: t(`profile.${field}`) }));
      redraw(next);
      return true;
    } catch (error) {
      ctx.toast(errorText(error), 'error');
      return false;
    }
  }

  const sources = (item) => (item.sources.length
    ? h('span', { class: 'sources' }, t('profile.from'), ' ',
      item.sources.map((id) => h('a', { href: `#/memory/${encodeURIComponent(id)}`, class: 'id' }, id)))
    : null);
  const manual = (item) => (item.manual ? h('span', { class: 'badge badge-manual', 'data-testid': 'manual-badge' }, t('profile.manual')) : null);

  function textCard(field) {
    const item = profile[field];
    const card = h('section', { class: 'card', 'data-testid': `profile-${field}` });
    const view = () => {
      clear(card).append(
        h('div', { class: 'card-head' }, h('h2', {}, t(`profile.${field}`)),
          h('button', { type: 'button', class: 'btn btn-small', 'data-testid': `profile-edit-${field}`, onclick: editing },
            t('profile.edit'))),
        item.text ? h('p', { class: 'profile-text', 'data-testid': `profile-text-${field}` }, item.text)
          : h('p', { class: 'muted', 'data-testid': `profile-text-${field}` }, t('profile.empty_text')),
        h('div', { class: 'meta' }, manual(item), sources(item)));
    };
    const editing = () => {
      const input = h('textarea', { id: `p-${field}`, rows: 3, 'data-testid': `profile-input-${field}`, value: item.text,
        maxlength: 500 });
      const form = h('form', { class: 'inline-form' },
        h('label', { for: `p-${field}`, class: 'sr-only' }, t(`profile.${field}`)), input,
        h('div', { class: 'form-actions' },
          h('button', { type: 'button', class: 'btn', onclick: view, 'data-testid': `profile-cancel-${field}` }, t('common.cancel')),
          h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': `profile-save-${field}` }, t('common.save'))));
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        edit(field, 'set', input.value.trim());
      });
      clear(card).append(h('div', { class: 'card-head' }, h('h2', {}, t(`profile.${field}`))), form);
      input.focus();
    };
    view();
    return card;
  }

  function listCard(field) {
    const items = profile[field];
    const input = h('input', { id: `p-${field}`, 'data-testid': `profile-add-input-${field}`, maxlength: 500,
      placeholder: t('profile.add_placeholder'), autocomplete: 'off' });
    const form = h('form', { class: 'add-row' },
      h('label', { for: `p-${field}`, class: 'sr-only' }, t('profile.add_to', { field: t(`profile.${field}`) })), input,
      h('button', { type: 'submit', class: 'btn', 'data-testid': `profile-add-${field}` }, t('profile.add')));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (input.value.trim()) await edit(field, 'add', input.value.trim());
    });
    return h('section', { class: 'card', 'data-testid': `profile-${field}` },
      h('div', { class: 'card-head' }, h('h2', {}, t(`profile.${field}`), ' ', h('span', { class: 'count' }, String(items.length)))),
      items.length
        ? h('ul', { class: 'profile-list' }, items.map((item) => h('li', { 'data-testid': 'profile-item' },
          h('div', {}, h('span', { 'data-testid': 'profile-item-text' }, item.text), ' ', manual(item),
            h('div', { class: 'meta' }, sources(item))),
          h('button', { type: 'button', class: 'btn btn-small btn-ghost', 'data-testid': 'profile-remove',
            'aria-label': t('profile.remove_item', { text: item.text }),
            onclick: async () => {
              const ok = await ctx.confirm({ title: t('profile.confirm_remove'), message: item.text, ok: t('profile.remove') });
              if (ok) await edit(field, 'remove', item.text);
            } }, t('profile.remove')))))
        : h('p', { class: 'muted' }, t('profile.empty_list')),
      form);
  }

  container.append(
    h('p', { class: 'lead', 'data-testid': 'profile-meta' },
      t(`profile.method_${profile.method}`, {}, null) ?? profile.method, ' · ',
      profile.synthesized_at ? t('profile.synthesized', { when: fmtDate(profile.synthesized_at) }) : t('profile.never')),
    h('div', { class: 'grid-2' }, TEXTS.map(textCard)),
    h('div', { class: 'grid-2' }, LISTS.map(listCard)));
}
