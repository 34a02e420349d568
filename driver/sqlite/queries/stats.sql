SELECT queue, 'pending', COUNT(*), MIN(CASE WHEN next_run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now') THEN next_run_at END) FROM sluice_jobs WHERE status = 'pending' GROUP BY queue
UNION ALL
SELECT queue, 'processing', COUNT(*), NULL FROM sluice_jobs WHERE status = 'processing' GROUP BY queue
UNION ALL
SELECT queue, 'failed', COUNT(*), NULL FROM sluice_jobs WHERE status = 'failed' GROUP BY queue
ORDER BY 1
