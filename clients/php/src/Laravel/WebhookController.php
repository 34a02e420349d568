<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Container\Container;
use Illuminate\Contracts\Debug\ExceptionHandler;
use Illuminate\Http\Request;
use Illuminate\Http\Response;
use Illuminate\Queue\MaxAttemptsExceededException;
use Illuminate\Queue\WorkerOptions;
use Sluice\Webhook\Receiver;
use Sluice\Webhook\Reply;
use Sluice\Webhook\SignatureException;

/**
 * The route sluice's webhook calls, POST /sluice/jobs, which
 * SluiceServiceProvider registers outside the api and web middleware
 * groups (no /api prefix, no throttle, no CSRF).
 *
 * It checks the webhook signature with queue.connections.sluice.secret
 * (several, comma-separated, during a rotation), then the job's own
 * signature (SignedPayload, APP_KEY) before anything in the payload is
 * decoded, and runs the job with Laravel's Worker::process(), as queue:work
 * does: JobProcessing/JobProcessed/JobFailed events and Queue::before/after/
 * failing listeners, the class's $tries, retryUntil(), $maxExceptions and
 * $backoff, failed(), batches, chains, unique locks, and the exception
 * handler's report(). The answer tells sluice what became of it: 200 done,
 * 503 (with Retry-After: the job's backoff or release delay) to run it again,
 * 422 failed for good.
 */
final class WebhookController
{
    public function __construct(private readonly Container $app)
    {
    }

    public function __invoke(Request $request): Response
    {
        $reply = $this->handle($request);
        return new Response($reply->body, $reply->status, $reply->headers);
    }

    private function handle(Request $request): Reply
    {
        $name = $this->app['config']['queue.sluice_connection'] ?? 'sluice';
        $config = $this->app['config']["queue.connections.$name"] ?? [];
        $secrets = array_values(array_filter(array_map('trim', explode(',', (string) ($config['secret'] ?? '')))));
        try {
            $delivery = (new Receiver($secrets))->receive($request->getContent(), $request->headers->all());
        } catch (SignatureException $e) {
            return Reply::unauthorized($e->getMessage());
        } catch (\UnexpectedValueException $e) {
            return Reply::fail($e->getMessage());
        }
        try {
            if (SignedPayload::isUnsigned($delivery->payload)) {
                // Written by the adapter before jobs were signed, or by someone
                // who is not the app: run only when the app says it wrote every
                // such job (a migration window), never by default.
                if (($config['accept_unsigned'] ?? false) !== true) {
                    return Reply::fail('payload: unsigned Laravel job refused (queued before sluice signed jobs, or not by this app); see "Upgrading" in docs/php.md');
                }
                $payload = SignedPayload::pinned($delivery->payload);
            } else {
                $payload = SignedPayload::open($delivery->payload, SignedPayload::keys((array) $this->app['config']['app']));
            }
        } catch (\UnexpectedValueException $e) {
            return Reply::fail($e->getMessage());
        }

        // After `sluice jobs retry` of a job Laravel failed, count its
        // attempts from there, as `queue:retry` gives a job its tries afresh.
        $cache = $this->app->bound('cache') ? $this->app['cache']->driver() : null;
        $failedAt = 'sluice-failed-at:' . $delivery->idempotencyKey;
        // Resolved when the job first asks: a job that never does costs nothing.
        $cancelled = function () use ($name, $delivery): bool {
            $queue = $this->app['queue']->connection($name);
            return $queue instanceof SluiceQueue && $queue->isCancelled($delivery->id);
        };
        $job = new SluiceJob($this->app, $delivery, $payload, $name, (int) ($cache?->get($failedAt) ?? 0), $cancelled);
        $worker = $this->app->make('queue.worker');
        if ($cache !== null && method_exists($worker, 'setCache')) {
            $worker->setCache($cache); // $maxExceptions counts in the cache, as queue:work's
        }
        $options = new WorkerOptions($name, (int) ($config['backoff'] ?? 0), maxTries: (int) ($config['tries'] ?? 1));
        $thrown = null;
        try {
            $worker->process($name, $job, $options);
        } catch (\Throwable $e) {
            // What Worker::runJob() does with it under queue:work.
            $thrown = $e;
            $this->app->make(ExceptionHandler::class)->report($e);
        }

        if ($job->isReleased() && !$job->hasFailed() && $delivery->isLastAttempt()) {
            // Laravel would run it again, sluice has no delivery left (a
            // job retried with `sluice jobs retry`, or a type whose
            // max_attempts is lower): fail it the way Laravel fails a job
            // out of attempts, so that failed() and the batch hear of it.
            $thrown = new MaxAttemptsExceededException($job->resolveName() . ' has been attempted too many times: sluice has no delivery left for it (max_attempts ' . $delivery->maxAttempts . ')');
            $job->fail($thrown);
            $this->app->make(ExceptionHandler::class)->report($thrown);
        }
        if ($job->hasFailed()) {
            $cache?->put($failedAt, $delivery->attempt, 30 * 86400); // a retry within 30 days counts afresh; later, Laravel fails it at once
            $reason = $job->failure() ?? $thrown;
            return Reply::fail($reason === null ? 'the job failed' : self::describe($reason));
        }
        if ($job->isReleased()) {
            // An exception with no $backoff on the class nor the connection:
            // sluice's backoff rather than queue:work's immediate retry.
            $delay = $thrown !== null && ($payload['backoff'] ?? null) === null && !isset($config['backoff'])
                ? null : $job->releaseDelay();
            return Reply::retry($thrown === null ? 'released' : self::describe($thrown), $delay);
        }
        return Reply::done(['job' => $job->resolveName()]);
    }

    private static function describe(\Throwable $e): string
    {
        return $e->getMessage() === '' ? get_class($e) : $e->getMessage();
    }
}
