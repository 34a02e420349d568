-- Rate buckets are named 'queue:<queue>', 'type:<type>' and
-- 'partition:<queue>#<partition>' (the start rates of a queue's
-- partitions), which takes up to 139 characters.
ALTER TABLE sluice_rate_buckets MODIFY name VARCHAR(160) NOT NULL;
