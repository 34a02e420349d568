<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeUniqueUntilProcessing;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/** Unique until it starts: a dispatch while it runs is a new job. */
final class UntilProcessing implements ShouldQueue, ShouldBeUniqueUntilProcessing
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public int $generation)
    {
    }

    public function uniqueId(): string
    {
        return 'import';
    }

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle', (string) $this->generation);
        if ($this->generation === 1) {
            dispatch(new self(2)); // the lock was released when this one started
        }
    }
}
