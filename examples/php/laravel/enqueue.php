<?php
// php enqueue.php FIRST LAST: places orders in DB::transaction, each
// dispatching SyncOrder onto the "orders" queue. Every 7th order is
// declined (the transaction rolls back: no job); every 3rd dispatches
// afterCommit() (written once the transaction commits); every 4th is
// delayed by three seconds (Laravel turns a DateTime delay into whole
// seconds from its own clock, so that is two or three: the test wants at
// least 1.9). Each process also dispatches the day's unique
// BuildReport.
declare(strict_types=1);
$app = require __DIR__ . '/bootstrap.php';

use App\Jobs\BuildReport;
use App\Jobs\SyncOrder;
use Illuminate\Support\Facades\DB;


[, $first, $last] = $argv + [null, '1', '1'];
for ($id = (int) $first; $id <= (int) $last; $id++) {
    try {
        DB::transaction(function () use ($id) {
            DB::table('orders')->insert(['id' => $id]);
            $pending = dispatch(new SyncOrder($id))->onQueue('orders');
            if ($id % 3 === 0) {
                $pending->afterCommit();
            }
            if ($id % 4 === 0) {
                $pending->delay(now()->addSeconds(3));
            }
            unset($pending); // dispatched here, inside the transaction
            if ($id % 7 === 0) {
                throw new DomainException("order $id declined");
            }
        });
        echo json_encode(['order' => $id, 'committed' => true]), "\n";
    } catch (DomainException $e) {
        echo json_encode(['order' => $id, 'committed' => false]), "\n";
    }
}
dispatch(new BuildReport('2026-12-01'));
