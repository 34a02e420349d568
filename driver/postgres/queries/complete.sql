-- history: see complete_batch.sql.
UPDATE sluice_jobs
SET status = $1, attempts = attempts - $2::int,
    next_run_at = CASE WHEN $3::int = 1 THEN next_run_at ELSE now() + $4::bigint * interval '1 microsecond' END,
    finished_at = CASE WHEN $5::int = 1 THEN now() ELSE NULL END,
    locked_by = NULL, locked_until = NULL,
    last_error = COALESCE($6, last_error), result = COALESCE($7, result), updated_at = now(),
    history = CASE WHEN $8::jsonb IS NULL THEN history ELSE
      (CASE WHEN jsonb_array_length(COALESCE(history, '[]')) > $9::int THEN history - 0 - 0
            WHEN jsonb_array_length(COALESCE(history, '[]')) = $10::int THEN history - 0
            ELSE COALESCE(history, '[]') END)
      || jsonb_build_array(jsonb_build_object('end', now()) || $11::jsonb) END
WHERE id = $12 AND locked_by = $13 AND status = 'processing'
