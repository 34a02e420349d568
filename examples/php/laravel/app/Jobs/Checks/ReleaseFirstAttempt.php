<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;

/** Job middleware: releases a job's first attempt for a second. */
final class ReleaseFirstAttempt
{
    public function handle(object $job, callable $next): void
    {
        if ($job->attempts() === 1) {
            AppServiceProvider::log(get_class($job), 'released by middleware', '1');
            $job->release(1);
            return;
        }
        $next($job);
    }
}
