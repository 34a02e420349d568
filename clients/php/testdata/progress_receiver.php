<?php
// A webhook receiver that reports its progress with Sluice\Api::progress, run
// by progress_test.go under `php -S` beside `sluice serve`. The test steps it
// through files in PROGRESS_DIR, so that it can look at the job between
// reports:
//   attempt 1: reports 1 of 3, keeps its progress token (a1.token), answers
//              503: sluice retries the job;
//   attempt 2: reports 1 of 3, waits for go2, reports 2 of 3, waits for go3,
//              reports with attempt 1's token (stale: the exception it gets
//              goes to stale.json), reports 3 of 3 and succeeds.
declare(strict_types=1);
require __DIR__ . '/../tests/bootstrap.php';

use Sluice\Api;
use Sluice\ApiException;
use Sluice\Webhook\Receiver;
use Sluice\Webhook\Reply;

$dir = getenv('PROGRESS_DIR');
$api = new Api(getenv('SLUICE_URL')); // no API token: the attempt's own token is enough
$job = (new Receiver(getenv('HOOK_SECRET')))->receiveGlobals();
$report = function (int $done, string $message) use ($api, $job): void {
    $api->progress($job->id, $job->progressToken, $done, 3, $message);
};
$await = function (string $name) use ($dir): void {
    for ($i = 0; !file_exists("$dir/$name"); $i++) {
        if ($i > 1200) {
            throw new RuntimeException("$name: not given within 2 minutes");
        }
        usleep(100_000);
    }
};

if ($job->attempt === 1) {
    $report(1, 'first try');
    file_put_contents("$dir/a1.token", $job->progressToken);
    Reply::retry('not yet', 1)->send();
    return;
}
$report(1, 'step 1');
$await('go2');
$report(2, 'step 2');
$await('go3');
try {
    $api->progress($job->id, (string) file_get_contents("$dir/a1.token"), 3, 3, 'from the stale attempt');
    $stale = ['refused' => false];
} catch (ApiException $e) {
    $stale = ['refused' => true, 'status' => $e->status, 'message' => $e->getMessage()];
}
file_put_contents("$dir/stale.json", json_encode($stale));
$report(3, 'step 3');
Reply::done(['steps' => 3])->send();
