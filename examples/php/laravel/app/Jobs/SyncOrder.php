<?php

declare(strict_types=1);

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\DB;
use Sluice\Idempotency;

/** Marks an order synced, once per job, however often sluice delivers it. */
final class SyncOrder implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 4;

    public function __construct(public int $orderId)
    {
    }

    public function handle(): void
    {
        if ($this->attempts() === 1 && $this->orderId % 5 === 1) {
            $this->release(1); // busy: sluice runs it again in a second
            return;
        }
        $pdo = DB::connection()->getPdo();
        (new Idempotency($pdo, DB::connection()->getTablePrefix() . 'applied'))->once($this->job->delivery(), function () {
            DB::table('orders')->where('id', $this->orderId)->update(['status' => 'synced', 'sync_count' => DB::raw('sync_count + 1')]);
        });
    }
}
