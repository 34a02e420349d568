SELECT queue, type, bucket, slot, count FROM sluice_stats_latency WHERE bucket >= ? ORDER BY bucket
