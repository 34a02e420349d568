<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/** Unlimited tries ($tries = 0), but failed at its second exception ($maxExceptions = 2). */
final class MaxExceptions implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 0;
    public $maxExceptions = 2;
    public $backoff = 1;

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle', (string) $this->attempts());
        throw new \RuntimeException('upstream down');
    }
}
