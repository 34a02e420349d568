<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Container\Container;
use Illuminate\Contracts\Debug\ExceptionHandler;
use Illuminate\Http\Request;
use Illuminate\Http\Response;
use Sluice\Webhook\Receiver;
use Sluice\Webhook\Reply;
use Sluice\Webhook\SignatureException;

/**
 * The route sluice's webhook calls (routes/api.php, outside CSRF):
 *
 *     Route::post('/sluice/jobs', \Sluice\Laravel\WebhookController::class);
 *
 * It checks the signature with queue.connections.sluice.secret (several,
 * comma-separated, during a rotation), runs the job class as queue:work
 * would (handle(), middleware, failed() on the last attempt), and answers
 * sluice: 200 done, 503 with Retry-After for a release() or an exception
 * with attempts left (sluice retries with its backoff), 422 when the job
 * failed for good, so that retries and failures are sluice's and show on its
 * dashboard.
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
        $job = new SluiceJob($this->app, $delivery, $name);
        try {
            $job->fire();
        } catch (\Throwable $e) {
            if ($delivery->isLastAttempt() || $job->hasFailed()) {
                $job->fail($e);
                return Reply::fail($e->getMessage());
            }
            if ($this->app->bound(ExceptionHandler::class)) {
                $this->app->make(ExceptionHandler::class)->report($e);
            }
            return Reply::retry($e->getMessage());
        }
        if ($job->hasFailed()) {
            return Reply::fail('the job failed');
        }
        if ($job->isReleased()) {
            return Reply::retry('released', $job->releaseDelay());
        }
        return Reply::done(['job' => $job->resolveName()]);
    }
}
