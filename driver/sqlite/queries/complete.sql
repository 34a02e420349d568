-- history: the attempt's entry (NULL: none) is appended, the oldest
-- dropped past keep; a smaller keep than before shrinks the history by one
-- more each attempt until it fits. Its end is the database clock.
-- Arguments: status, refund, final, delay, final, error, result, entry,
-- keep, keep, entry, id, token.
UPDATE sluice_jobs
SET status = ?, attempts = attempts - ?,
    next_run_at = CASE WHEN ? = 1 THEN next_run_at ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', ?) END,
    finished_at = CASE WHEN ? = 1 THEN strftime('%Y-%m-%d %H:%M:%f', 'now') ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE(?, last_error), result = COALESCE(?, result), updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    history = CASE WHEN ? IS NULL THEN history ELSE json_insert(
      CASE WHEN json_array_length(COALESCE(history, '[]')) > ? THEN json_remove(history, '$[0]', '$[0]')
           WHEN json_array_length(COALESCE(history, '[]')) = ? THEN json_remove(history, '$[0]')
           ELSE COALESCE(history, '[]') END,
      '$[#]', json_set(?, '$.end', strftime('%Y-%m-%d %H:%M:%f', 'now'))) END
WHERE id = ? AND locked_by = ? AND status = 'processing'
