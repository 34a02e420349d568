SELECT queue, type, outcome, bucket, count FROM sluice_stats WHERE bucket >= $1 ORDER BY bucket
