// The extraction log: each run of the sieve over one exchange, newest first, with what the fast
// patterns and the deep (model) channel found, the value scores, and what was stored or skipped.
import { call } from '../api.js';
import { categoryBadge, emptyState, fmtDate, fmtNum, h, loadInto } from '../dom.js';
import { t } from '../i18n.js';

const VALUE_PARTS = ['importance', 'novelty', 'relevance', 'credibility', 'granularity', 'timeliness'];

export function render(ctx, container) {
  const limit = Math.min(50, ctx.info.limits.max_page);
  loadInto(container, () => call('/extraction-log', { query: { limit } }), ({ entries }) => {
    container.append(h('p', { class: 'lead' }, t('log.lead')));
    container.append(entries.length === 0
      ? emptyState(t('log.empty'))
      : h('div', { class: 'log-list' }, entries.map(entryCard)));
  });
}

function entryCard(entry) {
  return h('article', { class: 'card log-entry', 'data-testid': 'log-entry', 'data-run': entry.run },
    h('div', { class: 'card-head' },
      h('h2', {}, h('code', {}, entry.run)),
      h('span', { class: `badge status-${entry.status}`, 'data-testid': 'log-status' }, t(`log.status_${entry.status}`)),
      h('span', { class: 'muted grow' },
        entry.session_id ? [t('log.session'), ' ', h('code', {}, entry.session_id), ' · '] : null,
        entry.client ? [t('log.client'), ' ', entry.client, ' · '] : null,
        h('time', { datetime: entry.created_at }, fmtDate(entry.created_at)))),
    h('div', { class: 'exchange' },
      h('div', {}, h('span', { class: 'label' }, t('log.user')), h('p', { 'data-testid': 'log-user' }, entry.user_preview)),
      entry.assistant_preview
        ? h('div', {}, h('span', { class: 'label' }, t('log.assistant')), h('p', {}, entry.assistant_preview)) : null),
    channel('fast', entry.fast),
    channel('deep', entry.deep),
    entry.fallback_note ? h('p', { class: 'alert alert-warn' }, entry.fallback_note) : null);
}

function channel(name, part) {
  return h('section', { class: 'channel', 'data-testid': `log-${name}` },
    h('h3', {}, t(`log.${name}`), ' ',
      h('span', { class: `badge outcome-${part.outcome}`, 'data-testid': 'log-outcome' },
        t(`outcome.${part.outcome}`, {}, null) ?? part.outcome),
      ' ', h('span', { class: 'muted' }, part.detail)),
    part.items.length ? h('table', { class: 'table table-compact' },
      h('thead', {}, h('tr', {}, h('th', {}, t('field.content')), h('th', {}, t('field.category')),
        h('th', {}, t('log.decision')), h('th', { class: 'num' }, t('log.value')), h('th', {}, t('log.reason')))),
      h('tbody', {}, part.items.map((item) => h('tr', { 'data-testid': 'log-item' },
        h('td', {}, item.content,
          item.id ? h('div', { class: 'meta' }, h('a', { href: `#/memory/${encodeURIComponent(item.id)}`, class: 'id',
            'data-testid': 'log-memory-link' }, item.id), item.action ? ` · ${t(`action_short.${item.action}`, {}, null) ?? item.action}` : null) : null),
        h('td', {}, categoryBadge(item.category)),
        h('td', {}, h('span', { class: `badge decision-${item.decision}`, 'data-testid': 'log-decision' },
          t(`decision.${item.decision}`, {}, null) ?? item.decision)),
        h('td', { class: 'num' }, item.value ? valueCell(item.value) : '–'),
        h('td', { class: 'muted' }, item.reason || ''))))) : null);
}

function valueCell(value) {
  const title = VALUE_PARTS.map((p) => `${t(`value.${p}`)} ${fmtNum(value[p], 1)}`).join(' · ');
  return h('span', { title, 'data-testid': 'log-value' }, fmtNum(value.total, 1),
    value.forced ? h('span', { class: 'badge badge-forced' }, t('log.forced')) : null);
}
