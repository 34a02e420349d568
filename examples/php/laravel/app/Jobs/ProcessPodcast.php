<?php

declare(strict_types=1);

namespace App\Jobs;

use App\Providers\AppServiceProvider;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

/** The job of Laravel's queue documentation: protected and private properties (NUL bytes in serialize()). */
final class ProcessPodcast implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    public function __construct(protected int $podcastId, private string $title)
    {
    }

    public function handle(): void
    {
        AppServiceProvider::log(self::class, 'handle', "{$this->podcastId}:{$this->title}");
    }
}
