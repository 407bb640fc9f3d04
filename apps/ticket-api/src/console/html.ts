/** Markup that is already safe (built by `html`): interpolated as is. Everything else is escaped. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Text for an HTML text node or a quoted attribute value. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"'`]/g, (c) => ENTITIES[c]);
}

type Part = SafeHtml | string | number | bigint | boolean | null | undefined | Date | readonly Part[];

function render(v: Part): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof SafeHtml) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  if (v instanceof Date) return escapeHtml(v.toISOString());
  return escapeHtml(v);
}

/**
 * The console's only way to make markup: every interpolated value is escaped unless it is SafeHtml
 * (the result of another `html`), so data from agents (ticket titles, keys, error texts) stays text.
 * Attribute values must be quoted in the template.
 */
export function html(strings: TemplateStringsArray, ...values: Part[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}
