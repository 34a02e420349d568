SELECT queue, type, outcome, bucket, count FROM sluice_stats WHERE bucket >= $1 AND bucket < $2
