<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * No $tries, but retryUntil(): retried while the time lasts. An hour
 * ahead, it throws twice and then succeeds; already past (the 'late'
 * one), Laravel fails it at its first delivery without running handle().
 */
final class RetryUntil implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $backoff = 1;

    public function __construct(public string $which)
    {
    }

    public function retryUntil(): \DateTimeInterface
    {
        return $this->which === 'late' ? now()->subMinute() : now()->addHour();
    }

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle', "{$this->which} {$this->attempts()}");
        if ($this->attempts() < 3) {
            throw new \RuntimeException("attempt {$this->attempts()} failed");
        }
    }

    public function failed(\Throwable $e): void
    {
        AppServiceProvider::log(self::class, 'failed', $this->which . ' ' . get_class($e));
    }
}
