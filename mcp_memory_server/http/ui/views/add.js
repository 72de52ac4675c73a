// Add a memory by hand (source "manual"): the server may store it, update the memory holding its key,
// merge it into a near-identical one, or find it unchanged; the toast says which.
import { call } from '../api.js';
import { errorText, h } from '../dom.js';
import { t } from '../i18n.js';
import { memoryForm } from './form.js';

export function render(ctx, container) {
  const form = memoryForm(ctx, {
    values: { category: 'fact', tier: 'core', importance: 0.5, confidence: 0.8 },
    withTier: true,
    submitLabel: t('add.submit'),
    testid: 'add-form',
    onCancel: () => ctx.navigate('#/memories'),
    async onSubmit(data, showError) {
      const body = { ...data };
      if (!body.key) delete body.key;
      try {
        const result = await call('/memories', { method: 'POST', body });
        ctx.toast(resultText(result), result.withheld && result.withheld.length ? 'warn' : 'ok');
        ctx.navigate(`#/memory/${encodeURIComponent(result.id)}`);
      } catch (error) {
        showError(errorText(error));
      }
    },
  });
  container.append(h('p', { class: 'lead' }, t('add.lead')), form);
  form.querySelector('textarea').focus();
}

/** "Stored as mem_12", "Updated mem_3 (same key)", ... and what was withheld as a secret. */
export function resultText(result) {
  let text = t(`action.${result.action}`, { id: result.id });
  if (result.withheld && result.withheld.length) {
    text += ` ${t('action.withheld', { kinds: result.withheld.join(', ') })}`;
  }
  return text;
}
