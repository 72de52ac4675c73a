// The memory list: category and tier filters, order, pages (the server's cursors), search through the
// real retriever with each hit's score and its parts, and selecting rows to delete them together.
import { call } from '../api.js';
import {
  bar, categoryBadge, categoryLabel, clear, emptyState, errorState, errorText, fmtDate, fmtInt, fmtNum, h, spinner,
  tierBadge,
} from '../dom.js';
import { t } from '../i18n.js';

const PAGE_SIZES = [10, 20, 50];
const MAX_ROW_TAGS = 6;
// Kept while the page is open, so coming back from a memory finds the same filters and page.
const state = { category: '', tier: '', order: 'updated', limit: 20, q: '', cursors: [null], page: 0, selected: new Set() };

const BREAKDOWN = ['keyword', 'category', 'recency', 'frequency', 'confidence', 'topic_boost'];

export function render(ctx, container) {
  const results = h('div', { class: 'results' });
  const bulk = h('div', { class: 'bulkbar', 'data-testid': 'bulk-bar', hidden: true });

  const categories = ctx.info.categories.includes(state.category) || !state.category
    ? ctx.info.categories : [...ctx.info.categories, state.category];
  const category = h('select', { id: 'filter-category', 'data-testid': 'filter-category' },
    h('option', { value: '' }, t('list.all_categories')),
    categories.map((c) => h('option', { value: c, selected: c === state.category }, categoryLabel(c))));
  const tier = h('select', { id: 'filter-tier', 'data-testid': 'filter-tier', disabled: Boolean(state.q) },
    h('option', { value: '' }, t('list.all_tiers')),
    ctx.info.tiers.map((x) => h('option', { value: x, selected: x === state.tier }, t(`tier.${x}`))));
  const order = h('select', { id: 'order', 'data-testid': 'order', disabled: Boolean(state.q) },
    ctx.info.orders.map((o) => h('option', { value: o, selected: o === state.order }, t(`order.${o}`))));
  const size = h('select', { id: 'page-size', 'data-testid': 'page-size', disabled: Boolean(state.q) },
    PAGE_SIZES.map((n) => h('option', { value: n, selected: n === state.limit }, t('list.per_page', { n }))));
  const query = h('input', { type: 'search', id: 'search', 'data-testid': 'search-input', value: state.q,
    placeholder: t('list.search_placeholder'), maxlength: ctx.info.limits.max_query });

  const refilter = () => {
    state.category = category.value;
    state.tier = tier.value;
    state.order = order.value;
    state.limit = Number(size.value);
    state.cursors = [null];
    state.page = 0;
    load();
  };
  for (const control of [category, tier, order, size]) control.addEventListener('change', refilter);

  const searchForm = h('form', { class: 'search', role: 'search', 'data-testid': 'search-form' },
    h('label', { for: 'search', class: 'sr-only' }, t('list.search_label')),
    h('span', { class: 'search-icon', 'aria-hidden': 'true' }, '⌕'), query,
    h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'search-submit' }, t('list.search')),
    h('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'search-clear', hidden: !state.q,
      onclick: () => { query.value = ''; state.q = ''; render(ctx, clear(container)); } }, t('list.clear_search')));
  searchForm.addEventListener('submit', (event) => {
    event.preventDefault();
    state.q = query.value.trim();
    state.cursors = [null];
    state.page = 0;
    render(ctx, clear(container));
    const again = container.querySelector('[data-testid="search-input"]');
    if (again) again.focus();
  });

  container.append(
    h('div', { class: 'toolbar' }, searchForm,
      h('div', { class: 'filters' },
        h('label', { for: 'filter-category', class: 'sr-only' }, t('list.category')), category,
        h('label', { for: 'filter-tier', class: 'sr-only' }, t('list.tier')), tier,
        h('label', { for: 'order', class: 'sr-only' }, t('list.order')), order,
        h('label', { for: 'page-size', class: 'sr-only' }, t('list.page_size')), size,
        h('a', { href: '#/add', class: 'btn btn-primary', 'data-testid': 'add-button' }, `+ ${t('list.add')}`))),
    bulk, results);

  function updateBulk() {
    clear(bulk);
    bulk.hidden = state.selected.size === 0;
    if (bulk.hidden) return;
    bulk.append(
      h('span', { 'data-testid': 'selected-count' }, t('list.selected', { n: state.selected.size })),
      h('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'clear-selection',
        onclick: () => { state.selected.clear(); load(); } }, t('list.clear_selection')),
      h('button', { type: 'button', class: 'btn btn-danger', 'data-testid': 'bulk-delete', onclick: deleteSelected },
        t('list.delete_selected', { n: state.selected.size })));
  }

  async function deleteSelected() {
    const ids = [...state.selected];
    const ok = await ctx.confirm({ title: t('list.confirm_bulk_title', { n: ids.length }),
      message: t('list.confirm_bulk_message', { ids: ids.join(', ') }) });
    if (!ok) return;
    // The server takes at most max_batch ids a call (MCP_MEMORY_MAX_BATCH): a bigger selection goes
    // in several calls; if one fails, what the earlier ones deleted is said and leaves the selection.
    const size = ctx.info.limits.max_batch;
    const deleted = [];
    const missing = [];
    try {
      for (let start = 0; start < ids.length; start += size) {
        const result = await call('/memories/delete', { method: 'POST', body: { ids: ids.slice(start, start + size) } });
        deleted.push(...result.deleted);
        missing.push(...result.not_found);
      }
      state.selected.clear();
      ctx.toast(t('list.deleted', { n: deleted.length }) +
        (missing.length ? ` ${t('list.not_found', { ids: missing.join(', ') })}` : ''));
    } catch (error) {
      for (const id of [...deleted, ...missing]) state.selected.delete(id);
      ctx.toast((deleted.length ? `${t('list.deleted', { n: deleted.length })} ` : '') + errorText(error), 'error');
    }
    load();
  }

  function checkbox(id, label) {
    return h('input', { type: 'checkbox', class: 'check', 'data-testid': 'select-row', 'aria-label': label,
      checked: state.selected.has(id),
      onchange: (event) => {
        if (event.target.checked) state.selected.add(id);
        else state.selected.delete(id);
        syncAll();
        updateBulk();
      } });
  }

  function selectAll(ids) {
    const all = h('input', { type: 'checkbox', class: 'check', 'data-testid': 'select-all', 'aria-label': t('list.select_page'),
      onchange: (event) => {
        for (const id of ids) {
          if (event.target.checked) state.selected.add(id);
          else state.selected.delete(id);
        }
        for (const box of results.querySelectorAll('[data-testid="select-row"]')) box.checked = event.target.checked;
        updateBulk();
      } });
    all.dataset.ids = ids.join(' ');
    return all;
  }

  function syncAll() {
    const all = results.querySelector('[data-testid="select-all"]');
    if (!all) return;
    const ids = all.dataset.ids ? all.dataset.ids.split(' ') : [];
    all.checked = ids.length > 0 && ids.every((id) => state.selected.has(id));
  }

  function contentCell(item) {
    return h('td', { class: 'cell-content' },
      h('a', { href: `#/memory/${encodeURIComponent(item.id)}`, class: 'content-link', 'data-testid': 'memory-link' },
        item.content),
      h('div', { class: 'meta' }, h('code', { class: 'id' }, item.id),
        item.key ? h('code', { class: 'key', 'data-testid': 'memory-key' }, item.key) : null,
        tagList(item.tags || [])));
  }

  // A row shows its first tags and how many more there are (the memory's page shows them all).
  function tagList(tags) {
    const shown = tags.slice(0, MAX_ROW_TAGS).map((tag) => h('span', { class: 'tag', 'data-testid': 'row-tag' }, `#${tag}`));
    if (tags.length > MAX_ROW_TAGS) {
      shown.push(h('span', { class: 'tag tag-more', 'data-testid': 'more-tags', title: tags.slice(MAX_ROW_TAGS).join(', ') },
        t('list.more_tags', { n: tags.length - MAX_ROW_TAGS })));
    }
    return shown;
  }

  // Each load is numbered: an answer to an earlier one (the list as it was before a filter changed,
  // arriving late) is dropped instead of replacing the rows of the latest.
  let latest = 0;

  async function loadList(run) {
    const cursor = state.cursors[state.page];
    const page = await call('/memories', { query: { category: state.category, tier: state.tier, order: state.order,
      limit: state.limit, cursor } });
    if (run !== latest) return;
    if (page.items.length === 0 && state.page > 0) { // this page's rows were all deleted: the one before
      state.cursors.length = state.page;
      state.page -= 1;
      await loadList(run);
      return;
    }
    clear(results);
    if (page.items.length === 0) {
      const filtered = state.category || state.tier;
      results.append(emptyState(filtered ? t('list.empty_filtered') : t('list.empty'),
        filtered ? null : h('a', { href: '#/add', class: 'btn btn-primary' }, t('list.add_first'))));
      return;
    }
    const ids = page.items.map((m) => m.id);
    const table = h('table', { class: 'table', 'data-testid': 'memory-table' },
      h('thead', {}, h('tr', {},
        h('th', { class: 'col-check' }, selectAll(ids)), h('th', {}, t('field.content')), h('th', {}, t('field.category')),
        h('th', {}, t('field.tier')), h('th', { class: 'num' }, t('field.importance')),
        h('th', { class: 'num' }, t('field.access_count')), h('th', { class: 'num' }, t(`order.col_${state.order}`)))),
      h('tbody', {}, page.items.map((m) => h('tr', { 'data-testid': 'memory-row', 'data-id': m.id },
        h('td', { class: 'col-check' }, checkbox(m.id, t('list.select_one', { id: m.id }))),
        contentCell(m), h('td', {}, categoryBadge(m.category)), h('td', {}, tierBadge(m.tier)),
        h('td', { class: 'num' }, fmtNum(m.importance)), h('td', { class: 'num' }, fmtInt(m.access_count)),
        h('td', { class: 'num nowrap' }, fmtDate(orderDate(m)))))));
    syncAllLater(table);
    const first = state.page * state.limit + 1;
    results.append(table, h('div', { class: 'pager' },
      h('span', { 'data-testid': 'page-info' },
        t('list.range', { from: fmtInt(first), to: fmtInt(first + page.items.length - 1), total: fmtInt(page.total) })),
      h('span', { class: 'pager-buttons' },
        h('button', { type: 'button', class: 'btn', 'data-testid': 'page-prev', disabled: state.page === 0,
          onclick: () => { state.page -= 1; load(); } }, `← ${t('list.prev')}`),
        h('span', { class: 'page-number', 'data-testid': 'page-number' }, t('list.page', { n: state.page + 1 })),
        h('button', { type: 'button', class: 'btn', 'data-testid': 'page-next', disabled: !page.next_cursor,
          onclick: () => { state.cursors[state.page + 1] = page.next_cursor; state.page += 1; load(); } },
        `${t('list.next')} →`))));
  }

  function orderDate(m) {
    return { created: m.created_at, accessed: m.last_accessed }[state.order] || m.updated_at;
  }

  function syncAllLater(table) {
    queueMicrotask(() => { if (table.isConnected) syncAll(); });
  }

  async function loadSearch(run) {
    const found = await call('/search', { query: { q: state.q, category: state.category, limit: ctx.info.limits.max_search } });
    if (run !== latest) return;
    clear(results);
    results.append(h('p', { class: 'search-meta', 'data-testid': 'search-meta' },
      t('search.summary', { n: found.hits.length }), ' · ', t('search.keywords'), ' ',
      found.keywords.length ? found.keywords.map((k) => h('span', { class: 'tag', 'data-testid': 'search-keyword' }, k))
        : t('search.no_keywords'),
      ' · ', t('search.stage'), ' ', h('code', {}, t(`stage.${found.stage}`, {}, null) ?? found.stage)));
    if (found.hits.length === 0) {
      results.append(emptyState(t('search.empty', { q: state.q })));
      return;
    }
    const ids = found.hits.map((x) => x.id);
    const table = h('table', { class: 'table', 'data-testid': 'search-table' },
      h('thead', {}, h('tr', {}, h('th', { class: 'col-check' }, selectAll(ids)), h('th', {}, t('field.content')),
        h('th', {}, t('field.category')), h('th', { class: 'col-score' }, t('search.score')))),
      h('tbody', {}, found.hits.map(hitRow)));
    syncAllLater(table);
    results.append(table);
  }

  function hitRow(hit) {
    const parts = BREAKDOWN.map((part) => [
      h('dt', {}, t(`breakdown.${part}`)),
      h('dd', {}, bar(Math.min(hit.breakdown[part], 1), 'breakdown-bar'),
        h('span', { class: 'num' }, fmtNum(hit.breakdown[part], 3))),
    ]);
    const score = h('td', { class: 'col-score' },
      h('div', { class: 'score' }, bar(hit.score, 'score-bar'),
        h('span', { class: 'num', 'data-testid': 'hit-score' }, fmtNum(hit.score, 3))),
      h('details', { class: 'breakdown' },
        h('summary', { 'data-testid': 'breakdown-toggle' }, t('search.breakdown')),
        h('dl', { 'data-testid': 'breakdown' }, parts)));
    return h('tr', { 'data-testid': 'search-hit', 'data-id': hit.id },
      h('td', { class: 'col-check' }, checkbox(hit.id, t('list.select_one', { id: hit.id }))),
      contentCell(hit), h('td', {}, categoryBadge(hit.category)), score);
  }

  async function load() {
    latest += 1;
    const run = latest;
    clear(results).append(spinner());
    updateBulk();
    try {
      await (state.q ? loadSearch(run) : loadList(run));
    } catch (error) {
      if (run === latest) clear(results).append(errorState(error, load));
    }
  }

  load();
}

/** Forget the selection of memories deleted elsewhere (the detail page). */
export function dropSelected(ids) {
  for (const id of ids) state.selected.delete(id);
}

/** Open the list filtered (from the statistics page): one category or one tier, first page. */
export function filterBy({ category = '', tier = '' }) {
  Object.assign(state, { category, tier, q: '', cursors: [null], page: 0 });
}
