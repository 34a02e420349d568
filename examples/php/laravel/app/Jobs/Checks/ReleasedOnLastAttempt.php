<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/** Always busy: release() on every attempt, so the last one ends in MaxAttemptsExceededException. */
final class ReleasedOnLastAttempt implements ShouldQueue, ShouldBeUnique
{
    use Batchable, Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 2;

    public function __construct(public string $name)
    {
    }

    public function uniqueId(): string
    {
        return $this->name;
    }

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle', (string) $this->attempts());
        $this->release(0);
    }

    public function failed(\Throwable $e): void
    {
        AppServiceProvider::log(self::class, 'failed', get_class($e));
    }
}
