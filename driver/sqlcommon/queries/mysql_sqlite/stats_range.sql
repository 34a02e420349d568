SELECT queue, type, outcome, bucket, count FROM sluice_stats WHERE bucket >= ? AND bucket < ?
