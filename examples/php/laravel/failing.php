<?php
// php failing.php ORDER: dispatches ChargeCard, which always throws. sluice
// retries it up to its $tries (2), then the class's failed() runs and the
// job is failed in sluice, with the error as its last_error.
declare(strict_types=1);
$app = require __DIR__ . '/bootstrap.php';

dispatch(new App\Jobs\ChargeCard((int) ($argv[1] ?? 1)));
