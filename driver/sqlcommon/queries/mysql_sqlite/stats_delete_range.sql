DELETE FROM sluice_stats WHERE bucket >= ? AND bucket < ?
