import { PRIORITIES, STATUSES } from '@tickets/contracts';

const counts = (keys: readonly string[]) => ({
  type: 'object',
  required: [...keys],
  properties: Object.fromEntries(keys.map((k) => [k, { type: 'integer', minimum: 0 }])),
});

/** GET /v1/stats in the OpenAPI document (spread into its `paths`). */
export const STATS_OPENAPI_PATHS = {
  '/v1/stats': {
    get: {
      summary: "Your tenant's ticket statistics, from the stats projection consumer (eventually consistent)",
      responses: {
        '200': {
          description: 'Tickets by status and priority, created and cancelled per UTC day',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['source', 'byStatus', 'byPriority', 'perDay'],
                properties: {
                  source: {
                    type: 'string',
                    description: 'The consumer group that keeps this projection (STATS_GROUP_ID)',
                  },
                  byStatus: counts(STATUSES),
                  byPriority: counts(PRIORITIES),
                  perDay: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['day', 'created', 'cancelled'],
                      properties: {
                        day: { type: 'string', format: 'date' },
                        created: { type: 'integer' },
                        cancelled: { type: 'integer' },
                      },
                    },
                  },
                },
              },
            },
          },
        },
        '401': {
          description: 'unauthorized',
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
        },
      },
    },
  },
};
