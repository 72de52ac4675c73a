// One memory: every field, how often and when it was recalled, its earlier values (a keyed memory's
// history, merges, edits); edit it in place or delete it.
import { call } from '../api.js';
import {
  categoryBadge, clear, errorText, fmtDate, fmtInt, fmtNum, h, loadInto, sourceLabel, tierBadge,
} from '../dom.js';
import { t } from '../i18n.js';
import { resultText } from './add.js';
import { memoryForm } from './form.js';
import { dropSelected } from './memories.js';

const EDITABLE = ['content', 'key', 'category', 'importance', 'confidence', 'tags'];

export function render(ctx, container, [id]) {
  loadInto(
    container,
    () => call(`/memories/${encodeURIComponent(id)}`),
    (data, reload) => show(ctx, container, data, reload),
    () => [h('a', { href: '#/memories', class: 'back', 'data-testid': 'back' }, `← ${t('detail.back')}`)],
  );
}

function show(ctx, container, { memory, history }, reload) {
  ctx.setTitle(t('title.memory_id', { id: memory.id }));
  const body = h('div', { class: 'detail-body' });
  const editButton = h('button', { type: 'button', class: 'btn', 'data-testid': 'edit-button', onclick: edit }, t('detail.edit'));
  const deleteButton = h('button', { type: 'button', class: 'btn btn-danger', 'data-testid': 'delete-button', onclick: remove },
    t('common.delete'));

  container.append(
    h('div', { class: 'detail-head' },
      h('a', { href: '#/memories', class: 'back', 'data-testid': 'back' }, `← ${t('detail.back')}`),
      h('div', { class: 'actions' }, editButton, deleteButton)),
    body);
  view();

  function view() {
    clear(body).append(
      h('section', { class: 'card detail-main', 'data-testid': 'memory-detail' },
        h('p', { class: 'detail-content', 'data-testid': 'detail-content' }, memory.content),
        h('div', { class: 'badges' }, categoryBadge(memory.category), tierBadge(memory.tier),
          memory.key ? h('code', { class: 'key', 'data-testid': 'detail-key' }, memory.key) : null,
          memory.tags.map((tag) => h('span', { class: 'tag', 'data-testid': 'detail-tag' }, `#${tag}`)))),
      h('div', { class: 'grid-2 detail-grid' },
        h('section', { class: 'card' }, h('h2', {}, t('detail.fields')),
          h('dl', { class: 'fields', 'data-testid': 'detail-fields' },
            row('id', h('code', {}, memory.id)),
            row('key', memory.key ? h('code', {}, memory.key) : t('common.none')),
            row('category', memory.category),
            row('tier', t(`tier.${memory.tier}`)),
            row('importance', h('span', { class: 'num' }, fmtNum(memory.importance))),
            row('confidence', h('span', { class: 'num' }, fmtNum(memory.confidence))),
            row('source', sourceLabel(memory.source)),
            row('tags', memory.tags.length ? memory.tags.join(', ') : t('common.none')),
            row('session_id', memory.session_id ? h('code', {}, memory.session_id) : t('common.none')),
            row('client', memory.client || t('common.none')),
            row('created_at', fmtDate(memory.created_at)),
            row('updated_at', fmtDate(memory.updated_at)))),
        h('section', { class: 'card' }, h('h2', {}, t('detail.access')),
          h('div', { class: 'stat-pair' },
            h('div', { class: 'stat' }, h('span', { class: 'stat-value num', 'data-testid': 'access-count' }, fmtInt(memory.access_count)),
              h('span', { class: 'stat-label' }, t('field.access_count'))),
            h('div', { class: 'stat' }, h('span', { class: 'stat-value small', 'data-testid': 'last-accessed' }, fmtDate(memory.last_accessed)),
              h('span', { class: 'stat-label' }, t('field.last_accessed')))),
          h('p', { class: 'muted' }, t('detail.access_note')))),
      historySection());
  }

  function row(name, value) {
    return [h('dt', {}, t(`field.${name}`)), h('dd', { 'data-testid': `field-${name}` }, value)];
  }

  function historySection() {
    const section = h('section', { class: 'card', 'data-testid': 'history' },
      h('h2', {}, t('detail.history'), ' ', h('span', { class: 'count' }, fmtInt(history.length))));
    if (history.length === 0) {
      section.append(h('p', { class: 'muted', 'data-testid': 'history-empty' }, t('detail.no_history')));
      return section;
    }
    section.append(h('ol', { class: 'timeline' }, [...history].reverse().map((entry) =>
      h('li', { 'data-testid': 'history-entry' },
        h('div', { class: 'timeline-head' },
          h('span', { class: `badge reason-${entry.reason}` }, t(`reason.${entry.reason}`, {}, null) ?? entry.reason),
          h('time', { datetime: entry.changed_at }, fmtDate(entry.changed_at))),
        h('p', { class: 'history-content' }, entry.content),
        h('div', { class: 'meta' },
          entry.key ? h('code', { class: 'key' }, entry.key) : null,
          categoryBadge(entry.category),
          h('span', { class: 'num' }, `${t('field.importance')} ${fmtNum(entry.importance)}`),
          h('span', { class: 'num' }, `${t('field.confidence')} ${fmtNum(entry.confidence)}`),
          (entry.tags || []).map((tag) => h('span', { class: 'tag' }, `#${tag}`)))))));
    return section;
  }

  function edit() {
    editButton.disabled = true;
    const form = memoryForm(ctx, {
      values: memory,
      withTier: false,
      submitLabel: t('detail.save'),
      testid: 'edit-form',
      onCancel: () => { editButton.disabled = false; view(); },
      async onSubmit(data, showError) {
        const changes = {};
        for (const name of EDITABLE) {
          const before = name === 'tags' ? memory.tags.join('\n') : (memory[name] ?? '');
          const after = name === 'tags' ? data.tags.join('\n') : data[name];
          if (before !== after) changes[name] = data[name];
        }
        if (Object.keys(changes).length === 0) {
          ctx.toast(t('detail.nothing_changed'), 'info');
          return;
        }
        try {
          const result = await call(`/memories/${encodeURIComponent(memory.id)}`, { method: 'PATCH', body: changes });
          ctx.toast(resultText(result), result.withheld && result.withheld.length ? 'warn' : 'ok');
          reload();
        } catch (error) {
          showError(errorText(error));
        }
      },
    });
    clear(body).append(h('h2', { class: 'section-title' }, t('detail.editing')), form);
    form.querySelector('textarea').focus();
  }

  async function remove() {
    const ok = await ctx.confirm({ title: t('detail.confirm_title', { id: memory.id }), message: memory.content });
    if (!ok) return;
    try {
      const result = await call(`/memories/${encodeURIComponent(memory.id)}`, { method: 'DELETE' });
      dropSelected(result.deleted);
      ctx.toast(result.deleted.length ? t('detail.deleted', { id: memory.id }) : t('list.not_found', { ids: memory.id }),
        result.deleted.length ? 'ok' : 'warn');
      ctx.navigate('#/memories');
    } catch (error) {
      ctx.toast(errorText(error), 'error');
    }
  }
}
