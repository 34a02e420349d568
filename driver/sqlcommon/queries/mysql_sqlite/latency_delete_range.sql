DELETE FROM sluice_stats_latency WHERE bucket >= ? AND bucket < ?
