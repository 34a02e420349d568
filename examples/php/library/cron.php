<?php
// The crontab line `* * * * * cd ~/app && php cron.php`: one bounded pass of
// sluice's workers through its HTTP API (SLUICE_URL, SLUICE_TOKEN).
declare(strict_types=1);
require __DIR__ . '/app.php';

$api = new Sluice\Api(getenv('SLUICE_URL') ?: 'http://127.0.0.1:8080', getenv('SLUICE_TOKEN') ?: null);
echo json_encode($api->run(['max_jobs' => 50, 'max_seconds' => 20])), "\n";
