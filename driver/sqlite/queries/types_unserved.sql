-- Pending jobs, by type, of the types no process has served (ServeTypes)
-- since now + the (negative) duration given.
SELECT j.type, COUNT(*) FROM sluice_jobs j WHERE j.status = 'pending' AND NOT EXISTS (
  SELECT 1 FROM sluice_types t WHERE t.type = j.type AND t.served_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', ?))
GROUP BY j.type ORDER BY j.type
