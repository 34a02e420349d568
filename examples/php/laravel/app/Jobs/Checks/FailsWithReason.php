<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/** $this->fail($e): failed for good with its own reason, whatever $tries says. */
final class FailsWithReason implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 5;

    public function handle(): void
    {
        $this->fail(new \DomainException('coupon expired'));
    }
}
