// Export the namespace as the JSON file `jiyi export` writes, and import a file in any
// format `jiyi import` reads (this server's JSON, memory.jsonl, mem0 / OpenMemory, zip or
// gz of those, MEMORY.md), detected or chosen: all or nothing; importing the same file again changes
// nothing. The file goes up as it is (its bytes); the server unpacks and reads it.
import { call, download } from '../api.js';
import { clear, errorText, fmtBytes, fmtInt, h } from '../dom.js';
import { t } from '../i18n.js';

export function render(ctx, container) {
  const exportButton = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'export-button' }, t('transfer.export'));
  exportButton.addEventListener('click', async () => {
    exportButton.disabled = true;
    try {
      const { blob, filename } = await download('/export');
      const url = URL.createObjectURL(blob);
      const link = h('a', { href: url, download: filename, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      ctx.toast(t('transfer.exported', { name: filename }));
    } catch (error) {
      ctx.toast(errorText(error), 'error');
    } finally {
      exportButton.disabled = false;
    }
  });

  const file = h('input', { type: 'file', id: 'import-file', class: 'sr-only', 'data-testid': 'import-file', tabindex: '-1',
    accept: '.json,.jsonl,.md,.markdown,.txt,.zip,.gz,application/json,text/markdown,text/plain,application/zip,application/gzip' });
  const format = h('select', { id: 'import-format', 'data-testid': 'import-format' },
    ctx.info.import_formats.map((name) => h('option', { value: name }, t(`format.${name}`, {}, null) ?? name)));
  const chosen = h('span', { class: 'muted', 'data-testid': 'import-chosen' }, t('transfer.no_file'));
  const choose = h('button', { type: 'button', class: 'btn', 'data-testid': 'import-choose', onclick: () => file.click() },
    t('transfer.choose'));
  const importButton = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'import-submit', disabled: true },
    t('transfer.import'));
  const report = h('div', { 'data-testid': 'import-result' });
  file.addEventListener('change', () => {
    const picked = file.files[0];
    chosen.textContent = picked ? picked.name : t('transfer.no_file');
    importButton.disabled = !picked;
    clear(report);
  });
  importButton.addEventListener('click', async () => {
    const picked = file.files[0];
    if (!picked) return;
    clear(report);
    const max = ctx.info.limits.max_body;
    if (picked.size > max) {
      report.append(h('div', { class: 'alert alert-error', role: 'alert', 'data-testid': 'import-error' },
        t('transfer.too_big', { name: picked.name, size: fmtBytes(picked.size), max: fmtBytes(max) })));
      return;
    }
    importButton.disabled = true;
    try {
      const result = await call('/import', { method: 'POST', raw: picked, rawType: 'application/octet-stream',
        query: { format: format.value } });
      ctx.toast(t('transfer.imported', { n: result.created }));
      report.append(reportCard(result));
    } catch (error) {
      report.append(h('div', { class: 'alert alert-error', role: 'alert', 'data-testid': 'import-error' }, errorText(error)));
    } finally {
      importButton.disabled = false;
    }
  });

  container.append(h('div', { class: 'grid-2' },
    h('section', { class: 'card' }, h('h2', {}, t('transfer.export_title')), h('p', { class: 'muted' }, t('transfer.export_lead')),
      h('div', { class: 'form-actions start' }, exportButton)),
    h('section', { class: 'card' }, h('h2', {}, t('transfer.import_title')), h('p', { class: 'muted' }, t('transfer.import_lead')),
      h('label', { for: 'import-file', class: 'sr-only' }, t('transfer.choose')), file,
      h('div', { class: 'file-row' }, choose, chosen),
      h('div', { class: 'field' }, h('label', { for: 'import-format' }, t('transfer.format')), format),
      h('div', { class: 'form-actions start' }, importButton),
      report)));
}

function reportCard(result) {
  const row = (name, value) => [h('dt', {}, t(`report.${name}`)), h('dd', { class: 'num', 'data-testid': `report-${name}` }, value)];
  return h('div', { class: 'report', 'data-testid': 'import-report' },
    h('h3', {}, t('transfer.report')),
    h('dl', { class: 'fields' },
      row('format', t(`format.${result.format}`, {}, null) ?? result.format),
      row('items', fmtInt(result.items)),
      row('created', fmtInt(result.created)),
      row('updated', fmtInt(result.updated)),
      row('present', fmtInt(result.present)),
      result.archived ? row('archived', fmtInt(result.archived)) : null,
      result.skipped ? row('skipped', fmtInt(result.skipped)) : null,
      row('withheld', fmtInt(result.withheld)),
      row('refused', result.refused.length ? result.refused.join(', ') : fmtInt(0))),
    h('p', { class: 'muted', 'data-testid': 'report-detail' }, result.detail));
}
