DELETE FROM sluice_stats_latency WHERE bucket >= $1 AND bucket < $2
