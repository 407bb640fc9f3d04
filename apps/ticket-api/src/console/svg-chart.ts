import { html, type SafeHtml } from './html';

export interface Series {
  name: string;
  color: string;
}

export interface BarChart {
  /** One column per x value (a minute, a partition), each with one value per series, stacked. */
  columns: Array<{ label: string; values: number[] }>;
  series: Series[];
  /** Accessible name of the chart. */
  title: string;
  width?: number;
  height?: number;
}

/** A stacked bar chart as inline SVG, rendered on the server (no script, no chart library). */
export function barChart(c: BarChart): SafeHtml {
  const width = c.width ?? 640;
  const height = c.height ?? 140;
  const pad = { left: 36, right: 8, top: 8, bottom: 20 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const max = Math.max(1, ...c.columns.map((col) => col.values.reduce((a, b) => a + b, 0)));
  const step = plotW / Math.max(1, c.columns.length);
  const barW = Math.max(1, step * 0.8);
  const y = (v: number) => (v / max) * plotH;
  const bars = c.columns.map((col, i) => {
    let base = pad.top + plotH;
    const x = pad.left + i * step + (step - barW) / 2;
    return col.values.map((v, s) => {
      if (v <= 0) return html``;
      const h = y(v);
      base -= h;
      return html`<rect x="${x.toFixed(1)}" y="${base.toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}" fill="${c.series[s].color}"><title>${col.label} ${c.series[s].name}: ${v}</title></rect>`;
    });
  });
  // Up to six labels along the x axis, evenly spread.
  const every = Math.max(1, Math.ceil(c.columns.length / 6));
  const labels = c.columns.map((col, i) =>
    i % every === 0
      ? html`<text x="${(pad.left + i * step + step / 2).toFixed(1)}" y="${height - 6}" text-anchor="middle">${col.label}</text>`
      : html``,
  );
  const legend =
    c.series.length > 1
      ? html`<p class="legend">${c.series.map((s) => html`<span><i style="background:${s.color}"></i>${s.name}</span> `)}</p>`
      : html``;
  return html`<figure class="chart"><svg role="img" aria-label="${c.title}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">
<title>${c.title}</title>
<line x1="${pad.left}" y1="${pad.top + plotH}" x2="${width - pad.right}" y2="${pad.top + plotH}" stroke="#999"/>
<text x="${pad.left - 4}" y="${pad.top + 10}" text-anchor="end">${max}</text><text x="${pad.left - 4}" y="${pad.top + plotH}" text-anchor="end">0</text>
${bars}${labels}</svg>${legend}</figure>`;
}

export interface Waterfall {
  title: string;
  /** One row per event: its stages as spans of milliseconds from the request. */
  rows: Array<{ label: string; spans: Array<{ name: string; fromMs: number; toMs: number; color: string }> }>;
  width?: number;
}

/** Where the time went, one row per event (a span of 0 ms still gets a sliver), on a shared millisecond axis. */
export function waterfall(w: Waterfall): SafeHtml {
  const width = w.width ?? 640;
  const rowH = 22;
  const labelW = 150;
  const height = w.rows.length * rowH + 18;
  const end = Math.max(1, ...w.rows.flatMap((r) => r.spans.map((s) => s.toMs)));
  const x = (ms: number) => labelW + (ms / end) * (width - labelW - 10);
  const rows = w.rows.map((r, i) => {
    const y = i * rowH + 4;
    return html`<text x="${labelW - 6}" y="${y + 13}" text-anchor="end">${r.label}</text>${r.spans.map(
      (s) =>
        html`<rect x="${x(s.fromMs).toFixed(1)}" y="${y}" width="${Math.max(2, x(s.toMs) - x(s.fromMs)).toFixed(1)}" height="${rowH - 8}" fill="${s.color}"><title>${s.name}: ${Math.round(s.toMs - s.fromMs)} ms</title></rect>`,
    )}`;
  });
  const names = [...new Map(w.rows.flatMap((r) => r.spans).map((s) => [s.name, s.color])).entries()];
  return html`<figure class="chart"><svg role="img" aria-label="${w.title}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}"><title>${w.title}</title>
${rows}<text x="${labelW}" y="${height - 2}">0 ms</text><text x="${width - 10}" y="${height - 2}" text-anchor="end">${Math.round(end)} ms</text></svg>
<p class="legend">${names.map(([name, color]) => html`<span><i style="background:${color}"></i>${name}</span> `)}</p></figure>`;
}
