<?php

declare(strict_types=1);

namespace App\Jobs\Scenarios;

use Illuminate\Bus\Batch;
use Illuminate\Support\Facades\Cache;
use Illuminate\Support\Facades\DB;

/** What the scenarios' jobs and callbacks observed, in the app's `log` table under the scenario's name. */
final class Record
{
    public static function log(string $scenario, string $event, string $detail = ''): void
    {
        DB::table('log')->insert(['job' => $scenario, 'event' => $event, 'detail' => mb_substr($detail, 0, 255)]);
    }

    /**
     * A run of handle(). A job outside a batch (in a chain, or alone) also
     * records how many of the scenario's runs came before it: its place in
     * the chain, whatever the worker's concurrency.
     */
    public static function ran(string $scenario, string $id, bool $ordered, string $more = ''): void
    {
        if ($ordered) {
            $id .= ' after ' . DB::table('log')->where('job', $scenario)->where('event', 'handle')->count();
        }
        self::log($scenario, 'handle', trim("$id $more"));
    }

    /** A batch callback, with the batch's counts as the callback sees them. */
    public static function batch(string $scenario, string $callback, Batch $batch, ?\Throwable $e = null): void
    {
        self::log($scenario, $callback, sprintf('total %d pending %d failed %d progress %d%s%s', $batch->totalJobs, $batch->pendingJobs,
            $batch->failedJobs, $batch->progress(), $batch->cancelled() ? ' cancelled' : '', $e === null ? '' : ': ' . $e->getMessage()));
    }

    /** Whether a unique job's lock is held now (probed without keeping it). */
    public static function lockHeld(object $job): bool
    {
        $id = method_exists($job, 'uniqueId') ? $job->uniqueId() : ($job->uniqueId ?? '');
        $lock = Cache::lock('laravel_unique_job:' . get_class($job) . $id, 10);
        if ($lock->get()) {
            $lock->release();
            return false;
        }
        return true;
    }
}
