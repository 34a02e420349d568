-- Rows are inserted in input order, so the identity gives keyless rows
-- ascending ids in that order. A row whose key is taken is skipped, also
-- when an earlier row of the same batch took it.
INSERT INTO sluice_jobs (queue, type, business_key, dedupe, payload, priority, max_attempts, next_run_at, traceparent, partition_key)
SELECT u.queue, u.type, u.business_key, u.dedupe, u.payload::jsonb, u.priority, u.max_attempts,
       COALESCE(u.run_at, now() + u.delay_us * interval '1 microsecond'), u.traceparent, u.partition_key
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::timestamptz[], $9::bigint[], $10::text[], $11::text[])
  WITH ORDINALITY AS u(queue, type, business_key, dedupe, payload, priority, max_attempts, run_at, delay_us, traceparent, partition_key, ord)
ORDER BY u.ord
ON CONFLICT DO NOTHING
RETURNING id, business_key
