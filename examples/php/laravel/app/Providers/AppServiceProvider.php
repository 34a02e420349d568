<?php

declare(strict_types=1);

namespace App\Providers;

use Illuminate\Queue\Events\JobFailed;
use Illuminate\Queue\Events\JobProcessed;
use Illuminate\Queue\Events\JobProcessing;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Queue;
use Illuminate\Support\ServiceProvider;

/** The app's queue listeners, as an app hooks its logging or metrics onto queue:work. */
final class AppServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        Queue::before(fn (JobProcessing $e) => self::log($e->job->resolveName(), 'before', (string) $e->job->attempts()));
        Queue::after(fn (JobProcessed $e) => self::log($e->job->resolveName(), 'after', (string) $e->job->attempts()));
        Queue::failing(fn (JobFailed $e) => self::log($e->job->resolveName(), 'failing', get_class($e->exception)));
    }

    public static function log(string $job, string $event, string $detail = ''): void
    {
        DB::table('log')->insert(['job' => $job, 'event' => $event, 'detail' => mb_substr($detail, 0, 255)]);
    }
}
