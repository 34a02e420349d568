<?php
// php dispatch.php ORDER: a SyncOrder for an order that may not exist (its
// handler then fails the job at once).
declare(strict_types=1);
[, $bus] = require __DIR__ . '/bootstrap.php';

$bus->dispatch(new App\SyncOrder((int) ($argv[1] ?? 0)));
