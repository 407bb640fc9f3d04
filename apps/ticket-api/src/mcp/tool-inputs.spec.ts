import { CancelTicketInput, CreateTicketInput, ListTicketsQuery, TicketIdParam } from '@tickets/contracts';
import { TICKET_TOOL_INPUTS } from '@tickets/mcp-server';

// The MCP tools check their arguments against schemas of their own (JSON Schema every host can compile: no
// Unicode property pattern), and the API checks the same values against the contracts. The two must agree, or
// a model is refused what the API takes, or told one limit while the API enforces another. Each field is
// tried with values around its limits, alone, in an otherwise valid call. Text the API refuses as unstorable
// (NUL, lone surrogates) and metadata over its depth or size are the API's alone, and not tried here.

const long = (n: number, c = 'a') => c.repeat(n);
const STRINGS = ['x', '', '   ', ' x ', long(200), long(201), ` ${long(200)} `, long(500), long(501), 42, null, true];
const OBJECTS = [{}, { a: 1 }, [], 'x', null, 7];

const verdicts = (mcp: () => boolean, api: () => boolean) => ({ mcp: mcp(), api: api() });

describe('the MCP tools accept exactly what the API accepts', () => {
  const createCases: Record<string, unknown[]> = {
    title: [...STRINGS, undefined],
    description: ['', long(10_000), long(10_001), ' ', 42, null, undefined],
    priority: ['low', 'normal', 'high', 'urgent', 'critical', '', 'NORMAL', 1, null, undefined],
    external_ref: [...STRINGS, undefined],
    requester: [
      {},
      { name: 'A' },
      { name: '' },
      { name: long(200) },
      { name: long(201) },
      { email: 'a@b.co' },
      { email: 'not an address' },
      { email: `${long(64)}@${long(60)}.example.com` },
      { email: `${long(64)}@${long(250)}.com` },
      { name: 'A', phone: '1' },
      ...OBJECTS,
      undefined,
    ],
    metadata: [...OBJECTS, { nested: { deeper: [1, 'two', null] } }, undefined],
    assignee: ['bob', undefined],
  };
  const rest: Record<string, string> = { external_ref: 'externalRef' };

  it.each(Object.entries(createCases))('create_ticket: %s', (field, values) => {
    for (const value of values) {
      const args: Record<string, unknown> = { intent_id: 'i-1', title: 'A title' };
      const body: Record<string, unknown> = { title: 'A title' };
      if (value === undefined) {
        delete args[field];
        delete body[rest[field] ?? field];
      } else {
        args[field] = value;
        body[rest[field] ?? field] = value;
      }
      const got = verdicts(
        () => TICKET_TOOL_INPUTS.create_ticket.safeParse(args).success,
        () => CreateTicketInput.safeParse(body).success,
      );
      expect({ field, value, ...got }).toEqual({ field, value, mcp: got.api, api: got.api });
    }
  });

  it('cancel_ticket: reason', () => {
    for (const reason of [...STRINGS, ` ${long(500)} `, undefined]) {
      const got = verdicts(
        () =>
          TICKET_TOOL_INPUTS.cancel_ticket.safeParse({ ticket_id: '0b7f7c1e-3f4a-4d55-9a51-7f3a3d1e2c11', reason })
            .success,
        () => CancelTicketInput.safeParse(reason === undefined ? {} : { reason }).success,
      );
      expect({ reason, ...got }).toEqual({ reason, mcp: got.api, api: got.api });
    }
  });

  it('find_ticket: external_ref, as the pre-check GET /v1/tickets?externalRef= takes it', () => {
    for (const ref of STRINGS) {
      const got = verdicts(
        () => TICKET_TOOL_INPUTS.find_ticket.safeParse({ external_ref: ref }).success,
        () => ListTicketsQuery.safeParse({ externalRef: ref }).success,
      );
      expect({ ref, ...got }).toEqual({ ref, mcp: got.api, api: got.api });
    }
  });

  it('get_ticket and cancel_ticket: ticket_id, as /v1/tickets/{id} takes it', () => {
    const ids = [
      '0b7f7c1e-3f4a-4d55-9a51-7f3a3d1e2c11',
      '00000000-0000-0000-0000-000000000000',
      'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
      '0b7f7c1e-3f4a-9d55-0a51-7f3a3d1e2c11',
      '0b7f7c1e3f4a4d559a517f3a3d1e2c11',
      '{0b7f7c1e-3f4a-4d55-9a51-7f3a3d1e2c11}',
      'TICKET-42',
      '',
      42,
      null,
    ];
    for (const id of ids) {
      const api = TicketIdParam.safeParse(id).success;
      expect({ id, mcp: TICKET_TOOL_INPUTS.get_ticket.safeParse({ ticket_id: id }).success }).toEqual({ id, mcp: api });
      expect({ id, mcp: TICKET_TOOL_INPUTS.cancel_ticket.safeParse({ ticket_id: id }).success }).toEqual({
        id,
        mcp: api,
      });
    }
  });

  it('the same values come out: trimmed where the API trims', () => {
    const mcp = TICKET_TOOL_INPUTS.create_ticket.parse({ intent_id: 'i', title: '  T  ', external_ref: ' R ' });
    const api = CreateTicketInput.parse({ title: '  T  ', externalRef: ' R ' });
    expect([mcp.title, mcp.external_ref]).toEqual([api.title, api.externalRef]);
    expect(
      TICKET_TOOL_INPUTS.cancel_ticket.parse({ ticket_id: '00000000-0000-0000-0000-000000000000', reason: ' r ' })
        .reason,
    ).toBe(CancelTicketInput.parse({ reason: ' r ' }).reason);
  });
});
