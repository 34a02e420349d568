<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/** No $tries: one attempt, as under queue:work's default --tries=1 (an SMS is not sent twice). */
final class NoTries implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle');
        throw new \RuntimeException('sms gateway timed out');
    }

    public function failed(\Throwable $e): void
    {
        AppServiceProvider::log(self::class, 'failed', $e->getMessage());
    }
}
