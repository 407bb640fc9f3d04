import { escapeHtml, html } from './html';
import { barChart, waterfall } from './svg-chart';

describe('html (the console escapes every interpolated value)', () => {
  it('escapes text and attribute values', () => {
    const title = `<script>alert("x")</script>' onmouseover='y' \``;
    const out = html`<td title="${title}">${title}</td>`.value;
    expect(out).not.toContain('<script>');
    expect(out).toBe(
      `<td title="${escapeHtml(title)}">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;y&#39; &#96;</td>`,
    );
  });

  it('keeps markup built by html as is (no double escaping), joins arrays, drops null, undefined and false', () => {
    const inner = html`<b>${'a&b'}</b>`;
    expect(html`<p>${inner}${[html`<i>1</i>`, '<2>']}${null}${undefined}${false}${0}</p>`.value).toBe(
      '<p><b>a&amp;b</b><i>1</i>&lt;2&gt;0</p>',
    );
  });

  it('escapes chart labels and titles', () => {
    const svg = barChart({
      title: '<svg onload=x>',
      columns: [{ label: '</text><script>', values: [1] }],
      series: [{ name: '"s"', color: '#000' }],
    }).value;
    expect(svg).not.toMatch(/<script>|<svg onload/);
    expect(svg).toContain('&lt;/text&gt;&lt;script&gt;');
    const w = waterfall({
      title: 't',
      rows: [{ label: '</text><script>', spans: [{ name: '<b>', fromMs: 0, toMs: 5, color: '#000' }] }],
    }).value;
    expect(w).not.toMatch(/<script>|<b>/);
    expect(w).toContain('&lt;b&gt;: 5 ms');
  });
});
