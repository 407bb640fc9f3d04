import { Controller, Get, Inject, Param, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { AppConfig } from '@tickets/config';
import type { ErrorCode } from '@tickets/errors';
import { DomainError } from '@tickets/errors';
import { APP_CONFIG } from '../common/tokens';
import { PROBLEMS, PROBLEM_ADVICE } from '../common/problem';
import { buildOpenApi } from './openapi';

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

@Controller()
export class DocsController {
  private readonly openapi: ReturnType<typeof buildOpenApi>;
  private readonly page: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.openapi = buildOpenApi(config.idempotency);
    this.page = renderDocsPage(this.openapi);
  }

  @Get('openapi.json')
  document() {
    return this.openapi;
  }

  @Get('docs')
  docs(@Res() reply: FastifyReply): void {
    reply.type('text/html; charset=utf-8').send(this.page);
  }

  /** The `type` URI of every problem body resolves here. */
  @Get('problems/:code')
  problem(@Param('code') code: string) {
    // Own keys only: `in` would find constructor, __proto__ and toString on the prototype.
    if (!Object.hasOwn(PROBLEMS, code)) throw new DomainError('not_found', `No problem type ${code}.`);
    const c = code as ErrorCode;
    return { code: c, ...PROBLEMS[c], advice: PROBLEM_ADVICE[c] };
  }
}

/** A self-contained page (no CDN): every operation, its responses, and the problem codes. */
function renderDocsPage(doc: ReturnType<typeof buildOpenApi>): string {
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, { summary: string; responses: Record<string, { description: string }> }>).map(
      ([method, op]) =>
        `<section><h3><code>${method.toUpperCase()} ${esc(path)}</code></h3><p>${esc(op.summary)}</p><ul>${Object.entries(op.responses)
          .map(([s, r]) => `<li><b>${s}</b> ${esc(r.description)}</li>`)
          .join('')}</ul></section>`,
    ),
  );
  const codes = Object.entries(PROBLEMS)
    .map(([code, p]) => `<tr><td><code>${code}</code></td><td>${p.status}</td><td>${p.retryable ? 'yes' : 'no'}</td><td>${esc(PROBLEM_ADVICE[code as ErrorCode])}</td></tr>`)
    .join('');
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(doc.info.title)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .2em}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.3em .5em;vertical-align:top}</style>
</head><body><h1>${esc(doc.info.title)}</h1><p>${esc(doc.info.description)}</p><p>Machine-readable: <a href="/openapi.json">/openapi.json</a></p>
<h2>Operations</h2>${ops.join('\n')}<h2>Problem codes</h2><table><tr><th>code</th><th>status</th><th>retry helps</th><th>what to do</th></tr>${codes}</table></body></html>`;
}
