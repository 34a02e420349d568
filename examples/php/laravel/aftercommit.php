<?php
// php aftercommit.php: shows when a job is written. Without afterCommit()
// the job is in sluice_jobs inside the transaction (and leaves with a
// rollback); with it, only once the transaction has committed. Prints the
// queue's size at each step.
declare(strict_types=1);
$app = require __DIR__ . '/bootstrap.php';

use App\Jobs\SyncOrder;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Queue;

$seen = [];
DB::transaction(function () use (&$seen) {
    dispatch(new SyncOrder(0))->onQueue('audit');
    $seen['in_tx'] = Queue::size('audit');
    dispatch(new SyncOrder(0))->onQueue('audit')->afterCommit();
    $seen['in_tx_after_commit_dispatch'] = Queue::size('audit');
});
$seen['committed'] = Queue::size('audit');
echo json_encode($seen), "\n";
