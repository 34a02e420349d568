<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * A job middleware (as WithoutOverlapping and RateLimited do) releases
 * the first attempt before handle() runs; the second runs it.
 */
final class ReleasedByMiddleware implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 2;

    /** @return list<object> */
    public function middleware(): array
    {
        return [new ReleaseFirstAttempt()];
    }

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle', (string) $this->attempts());
    }
}
