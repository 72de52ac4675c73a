// The memory form, shared by "add" and "edit": content, key, category, (tier when adding),
// importance, confidence and tags. The server checks every value; its message is shown as it says it.
import { categoryLabel, field, h } from '../dom.js';
import { t } from '../i18n.js';

export function splitTags(text) {
  return text.split(/[,，、\n]/).map((s) => s.trim()).filter(Boolean);
}

/** Build the form; `values` are a memory's (edit) or defaults (add). onSubmit gets the form's values. */
export function memoryForm(ctx, { values, withTier, submitLabel, onSubmit, onCancel, testid }) {
  const limits = ctx.info.limits;
  const content = h('textarea', { id: 'm-content', 'data-testid': 'form-content', rows: 5, value: values.content || '',
    maxlength: limits.max_content });
  const counter = h('small', { class: 'hint num', 'data-testid': 'content-count' });
  const count = () => { counter.textContent = t('form.chars', { n: content.value.length, max: limits.max_content }); };
  content.addEventListener('input', count);
  count();
  const key = h('input', { id: 'm-key', 'data-testid': 'form-key', value: values.key || '', maxlength: limits.max_key,
    placeholder: 'user.city', spellcheck: 'false', autocomplete: 'off' });
  const listId = `categories-${testid}`;
  const category = h('input', { id: 'm-category', 'data-testid': 'form-category', value: values.category || 'fact',
    list: listId, spellcheck: 'false', autocomplete: 'off' });
  const datalist = h('datalist', { id: listId },
    ctx.info.categories.map((c) => h('option', { value: c }, categoryLabel(c))));
  const tier = withTier ? h('select', { id: 'm-tier', 'data-testid': 'form-tier' },
    ctx.info.tiers.map((x) => h('option', { value: x, selected: x === (values.tier || 'core') }, t(`tier.${x}`)))) : null;
  const unit = (id, testid2, value) => h('input', { id, 'data-testid': testid2, type: 'number', min: 0, max: 1, step: 0.05,
    value: String(value), inputmode: 'decimal' });
  const importance = unit('m-importance', 'form-importance', values.importance ?? 0.5);
  const confidence = unit('m-confidence', 'form-confidence', values.confidence ?? 0.8);
  const tags = h('input', { id: 'm-tags', 'data-testid': 'form-tags', value: (values.tags || []).join(', '),
    autocomplete: 'off' });
  const error = h('div', { class: 'alert alert-error', 'data-testid': 'form-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'form-submit' }, submitLabel);

  const form = h('form', { class: 'form card', 'data-testid': testid, novalidate: true },
    field(t('field.content'), content, counter),
    h('div', { class: 'grid-2' },
      field(t('field.key'), key, t('form.key_hint')),
      field(t('field.category'), category, t('form.category_hint'))),
    datalist,
    h('div', { class: withTier ? 'grid-3' : 'grid-2' },
      tier ? field(t('field.tier'), tier, t('form.tier_hint')) : null,
      field(t('field.importance'), importance, t('form.unit_hint')),
      field(t('field.confidence'), confidence, t('form.unit_hint'))),
    field(t('field.tags'), tags, t('form.tags_hint', { max: limits.max_tags })),
    error,
    h('div', { class: 'form-actions' },
      onCancel ? h('button', { type: 'button', class: 'btn', 'data-testid': 'form-cancel', onclick: onCancel }, t('common.cancel')) : null,
      submit));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const number = (input) => (input.value.trim() === '' ? Number.NaN : Number(input.value));
    const data = {
      content: content.value,
      key: key.value.trim(),
      category: category.value.trim(),
      importance: number(importance),
      confidence: number(confidence),
      tags: splitTags(tags.value),
    };
    if (tier) data.tier = tier.value;
    for (const name of ['importance', 'confidence']) {
      if (Number.isNaN(data[name])) {
        showError(t('form.not_a_number', { field: t(`field.${name}`) }));
        return;
      }
    }
    submit.disabled = true;
    try {
      await onSubmit(data, showError);
    } finally {
      submit.disabled = false;
    }
  });

  function showError(message) {
    error.textContent = message;
    error.hidden = false;
    error.scrollIntoView({ block: 'nearest' });
  }

  return form;
}
