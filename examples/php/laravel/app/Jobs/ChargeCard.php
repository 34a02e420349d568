<?php

declare(strict_types=1);

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\DB;

/** A job whose partner always refuses: retried by sluice, then failed(). */
final class ChargeCard implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 2;

    public function __construct(public int $orderId)
    {
    }

    public function handle(): void
    {
        throw new \RuntimeException("card of order {$this->orderId} declined by the partner");
    }

    public function failed(\Throwable $e): void
    {
        DB::table('failures')->insert(['order_id' => $this->orderId, 'error' => $e->getMessage()]);
    }
}
