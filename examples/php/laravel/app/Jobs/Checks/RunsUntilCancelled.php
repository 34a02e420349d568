<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * A long job an operator cancels while it runs (`sluice jobs cancel ID`):
 * it works in steps for up to four minutes and asks between them whether
 * it was cancelled, as docs/php.md "Cancelling a running job" shows. Only
 * the sluice connection has isCancelled(): Laravel's own queues cannot
 * cancel a running job.
 */
final class RunsUntilCancelled implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 1;

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle', 'started');
        for ($step = 1; $step <= 2400; $step++) {
            if (method_exists($this->job, 'isCancelled') && $this->job->isCancelled()) {
                AppServiceProvider::log(self::class, 'handle', 'stopped: cancelled');
                return;
            }
            usleep(100_000); // a step of the work
        }
        AppServiceProvider::log(self::class, 'handle', 'finished');
    }

    public function failed(\Throwable $e): void
    {
        AppServiceProvider::log(self::class, 'failed', get_class($e));
    }
}
