-- complete_batch.sql for a batch in which some outcome carries a history
-- entry (rows from complete_batch_history_first.sql); a batch without one
-- takes complete_batch.sql, which leaves the column alone. history as in
-- complete.sql, from the row's entry and keep.
UPDATE (/*ROWS*/) u STRAIGHT_JOIN sluice_jobs j FORCE INDEX (PRIMARY) ON j.id = u.id AND j.locked_by = u.token
SET j.status = u.status, j.attempts = j.attempts - u.refund,
    j.next_run_at = CASE WHEN u.keep_run_at = 1 THEN j.next_run_at ELSE UTC_TIMESTAMP(6) + INTERVAL u.delay_us MICROSECOND END,
    j.finished_at = CASE WHEN u.finish = 1 THEN UTC_TIMESTAMP(6) ELSE NULL END,
    j.locked_by = NULL, j.locked_until = NULL,
    j.last_error = COALESCE(u.error, j.last_error), j.result = COALESCE(u.result, j.result), j.updated_at = UTC_TIMESTAMP(6),
    j.history = CASE WHEN u.entry IS NULL THEN j.history ELSE JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(j.history, '[]')) > u.keep THEN JSON_REMOVE(j.history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(j.history, '[]')) = u.keep THEN JSON_REMOVE(j.history, '$[0]')
           ELSE COALESCE(j.history, '[]') END,
      '$', JSON_SET(u.entry, '$.end', UTC_TIMESTAMP(6))) END
WHERE j.status = 'processing'
