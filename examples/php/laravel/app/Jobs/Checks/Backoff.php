<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/** Throws twice, then succeeds: $tries and $backoff (an array) are the class's. */
final class Backoff implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 3;
    public $backoff = [2, 3];

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle', (string) $this->attempts());
        if ($this->attempts() < 3) {
            throw new \RuntimeException("attempt {$this->attempts()} failed");
        }
    }
}
