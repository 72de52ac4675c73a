// Export the namespace as the JSON file `mcp-memory-server export` writes, and import such a file:
// all or nothing, ids kept when free; importing the same file again changes nothing.
import { call, download } from '../api.js';
import { clear, errorText, fmtInt, h } from '../dom.js';
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

  const file = h('input', { type: 'file', id: 'import-file', accept: '.json,application/json', class: 'sr-only',
    'data-testid': 'import-file', tabindex: '-1' });
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
    importButton.disabled = true;
    clear(report);
    try {
      const result = await call('/import', { method: 'POST', raw: await picked.text() });
      ctx.toast(t('transfer.imported', { n: result.created.length }));
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
      h('div', { class: 'form-actions start' }, importButton),
      report)));
}

function reportCard(result) {
  const renamed = Object.entries(result.renamed || {});
  const row = (name, value) => [h('dt', {}, t(`report.${name}`)), h('dd', { class: 'num', 'data-testid': `report-${name}` }, value)];
  return h('div', { class: 'report', 'data-testid': 'import-report' },
    h('h3', {}, t('transfer.report')),
    h('dl', { class: 'fields' },
      row('memories', fmtInt(result.memories)),
      row('created', fmtInt(result.created.length)),
      row('present', fmtInt(result.present)),
      row('archived', fmtInt(result.archived)),
      row('renamed', renamed.length ? renamed.map(([a, b]) => `${a} → ${b}`).join(', ') : fmtInt(0)),
      row('withheld', fmtInt(typeof result.withheld === 'number' ? result.withheld : (result.withheld || []).length)),
      row('refused', fmtInt((result.refused || []).length)),
      row('sessions_added', fmtInt(result.sessions_added)),
      row('sessions_present', fmtInt(result.sessions_present)),
      row('profile_edits', result.profile_edits ? t('common.yes') : t('common.no'))));
}
