// Counts of the namespace: memories by category and tier, archived ones, sessions, the database.
import { call } from '../api.js';
import { bar, categoryLabel, fmtBytes, fmtDate, fmtInt, h, loadInto } from '../dom.js';
import { t } from '../i18n.js';
import { filterBy } from './memories.js';

export function render(ctx, container) {
  loadInto(container, () => call('/stats'), (stats) => show(container, stats));
}

function show(container, stats) {
  const tile = (name, value) => h('div', { class: 'card tile', 'data-testid': `stat-${name}` },
    h('span', { class: 'stat-value num' }, value), h('span', { class: 'stat-label' }, t(`stats.${name}`)));
  const breakdown = (title, counts, label, testid, filter) => {
    const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
    const most = Math.max(1, ...entries.map(([, n]) => n));
    return h('section', { class: 'card', 'data-testid': testid }, h('h2', {}, title),
      entries.length ? h('table', { class: 'table table-compact bars' }, h('tbody', {}, entries.map(([name, n]) =>
        h('tr', { 'data-testid': 'stat-row', 'data-name': name },
          h('td', {}, h('a', { href: '#/memories', 'data-testid': 'stat-link', onclick: () => filterBy({ [filter]: name }) },
            label(name))),
          h('td', { class: 'col-bar' }, bar(n / most, 'stat-bar')),
          h('td', { class: 'num' }, fmtInt(n))))))
        : h('p', { class: 'muted' }, t('stats.none')));
  };
  container.append(
    h('div', { class: 'tiles' },
      tile('total', fmtInt(stats.total)), tile('archived', fmtInt(stats.archived)),
      tile('sessions', fmtInt(stats.sessions)),
      // Null for a token holder: the database may hold other namespaces, and its size would tell of them.
      stats.db_bytes == null ? null : tile('db_bytes', fmtBytes(stats.db_bytes))),
    h('div', { class: 'grid-2' },
      breakdown(t('stats.by_category'), stats.by_category, categoryLabel, 'stats-categories', 'category'),
      h('div', { class: 'stack' },
        breakdown(t('stats.by_tier'), stats.by_tier, (x) => t(`tier.${x}`, {}, null) ?? x, 'stats-tiers', 'tier'),
        h('section', { class: 'card' }, h('h2', {}, t('stats.database')),
          h('dl', { class: 'fields' },
            stats.db_path == null ? null : [h('dt', {}, t('stats.db_path')),
              h('dd', {}, h('code', { 'data-testid': 'stat-db-path' }, stats.db_path))],
            h('dt', {}, t('stats.schema_version')), h('dd', {}, String(stats.schema_version)),
            h('dt', {}, t('stats.oldest')), h('dd', {}, stats.oldest ? fmtDate(stats.oldest) : t('common.none')),
            h('dt', {}, t('stats.newest')), h('dd', {}, stats.newest ? fmtDate(stats.newest) : t('common.none')))),
        stats.semantic ? semantic(stats.semantic) : null,
        stats.cleaned ? cleaned(stats.cleaned) : null)));
}

// What automatic cleanup archived lately, by name: nothing it does is hidden from the user.
function cleaned(report) {
  return h('section', { class: 'card', 'data-testid': 'stats-cleaned' },
    h('h2', {}, t('stats.cleaned', { days: report.days, count: fmtInt(report.count) })),
    report.latest.length
      ? h('ul', { class: 'cleaned' }, report.latest.map((m) => h('li', { 'data-testid': 'cleaned-row', 'data-id': m.id },
        h('code', {}, m.id), ' ', m.preview, ' ', h('span', { class: 'muted' }, `${fmtDate(m.archived_at)} · ${m.reason}`))))
      : h('p', { class: 'muted' }, t('stats.cleaned_none')),
    report.count ? h('p', { class: 'muted' }, t('stats.cleaned_restore')) : null);
}

// The semantic stage: its state, its model and how many memories have a vector (N of M, a bar).
function semantic(stage) {
  const share = stage.total > 0 ? stage.embedded / stage.total : 1;
  return h('section', { class: 'card', 'data-testid': 'stats-semantic', 'data-state': stage.state },
    h('h2', {}, t('stats.semantic')),
    h('dl', { class: 'fields' },
      h('dt', {}, t('stats.semantic_state')),
      h('dd', { 'data-testid': 'semantic-state' }, t(`semantic.${stage.state}`, {}, null) ?? stage.state),
      stage.model ? [h('dt', {}, t('stats.semantic_model')), h('dd', {}, h('code', {}, stage.model))] : null,
      stage.state === 'off' || stage.state === 'failed' ? null : [
        h('dt', {}, t('stats.semantic_progress')),
        h('dd', { 'data-testid': 'semantic-progress' }, bar(share, 'semantic-bar'),
          ` ${fmtInt(stage.embedded)} / ${fmtInt(stage.total)}`)],
      stage.reason ? [h('dt', {}, t('stats.semantic_reason')), h('dd', {}, stage.reason)] : null));
}
