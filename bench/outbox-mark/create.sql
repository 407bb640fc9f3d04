-- One outbox row per transaction, the size of the API's (about 1.1 kB per row); the ticket and key rows
-- of the API's create are the same in every variant and left out. As migrated, a trigger queues the row.
INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
VALUES (gen_random_uuid(), '00000000-0000-0000-0000-000000000001', 'ticket', gen_random_uuid(), 'ticket.created.v1',
        jsonb_build_object('id', gen_random_uuid(), 'type', 'ticket.created.v1',
                           'data', jsonb_build_object('title', repeat('x', 300), 'description', repeat('y', 400), 'priority', 'high')),
        jsonb_build_object('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'));
