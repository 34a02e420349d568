SELECT name FROM sluice_queues WHERE paused = 1
