-- history: the attempt's entry (NULL: none) is appended, the oldest
-- dropped past keep; a smaller keep than before shrinks the history by one
-- more each attempt until it fits. Its end is the database clock.
-- Arguments: status, refund, final, delay, final, error, result, entry,
-- keep, keep, entry, id, token.
UPDATE sluice_jobs
SET status = ?, attempts = attempts - ?,
    next_run_at = CASE WHEN ? = 1 THEN next_run_at ELSE UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND END,
    finished_at = CASE WHEN ? = 1 THEN UTC_TIMESTAMP(6) ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE(?, last_error), result = COALESCE(?, result), updated_at = UTC_TIMESTAMP(6),
    history = CASE WHEN ? IS NULL THEN history ELSE JSON_ARRAY_APPEND(
      CASE WHEN JSON_LENGTH(COALESCE(history, '[]')) > ? THEN JSON_REMOVE(history, '$[0]', '$[0]')
           WHEN JSON_LENGTH(COALESCE(history, '[]')) = ? THEN JSON_REMOVE(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$', JSON_SET(?, '$.end', UTC_TIMESTAMP(6))) END
WHERE id = ? AND locked_by = ? AND status = 'processing'
