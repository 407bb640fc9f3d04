import { z } from 'zod';
import { IsoInstant, SafeEmail, SafeJsonObject, SafeText } from './text-safety';

export const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
export const STATUSES = ['open', 'cancelled'] as const;

const jsonObject = z.record(z.string(), z.unknown());

/** Body of POST /v1/tickets. Unknown fields are rejected so that a typo never passes silently. */
export const CreateTicketInput = z
  .object({
    title: SafeText.trim().min(1, 'must not be empty').max(200),
    description: SafeText.max(10_000).optional(),
    priority: z.enum(PRIORITIES).default('normal'),
    externalRef: SafeText.trim().min(1, 'must not be empty').max(200).optional(),
    requester: z
      .object({
        name: SafeText.min(1).max(200).optional(),
        email: SafeEmail.max(320).optional(),
      })
      .strict()
      .optional(),
    metadata: SafeJsonObject.optional(),
  })
  .strict();
export type CreateTicketInput = z.infer<typeof CreateTicketInput>;

/** Body of POST /v1/tickets/{id}/cancel (may be empty). */
export const CancelTicketInput = z.object({ reason: SafeText.trim().min(1).max(500).optional() }).strict();
export type CancelTicketInput = z.infer<typeof CancelTicketInput>;

/**
 * Query of GET /v1/tickets: the externalRef pre-check, or the latest tickets before an instant. The reference
 * is trimmed as a create trims it, so the pre-check finds what a create with the same reference stored.
 */
export const ListTicketsQuery = z
  .object({
    externalRef: SafeText.trim().min(1, 'must not be empty').max(200).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
    before: IsoInstant.optional(),
  })
  .strict();
export type ListTicketsQuery = z.infer<typeof ListTicketsQuery>;

/**
 * The {id} of /v1/tickets/{id}: any 8-4-4-4-12 hex id, as PostgreSQL's uuid type takes it. One of another
 * version or variant is not a ticket (404), not malformed.
 */
export const TicketIdParam = z.guid({ message: 'must be a UUID (8-4-4-4-12 hex digits)' });

/** The ticket as the API returns it and as events carry it. */
export const Ticket = z.object({
  id: z.uuid(),
  title: z.string(),
  description: z.string().nullable(),
  priority: z.enum(PRIORITIES),
  status: z.enum(STATUSES),
  externalRef: z.string().nullable(),
  requester: z.object({ name: z.string().optional(), email: z.string().optional() }).nullable(),
  metadata: jsonObject.nullable(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
export type Ticket = z.infer<typeof Ticket>;
