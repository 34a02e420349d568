<?php

declare(strict_types=1);

namespace Sluice;

/**
 * sluice's HTTP API (docs/http-api.md) over curl: enqueue, a job's
 * status, cancel and retry, and a bounded cron pass (POST /v1/run), so that
 * the crontab line can be `php cron.php` or an artisan / console command.
 */
final class Api
{
    /**
     * @param string $baseUrl such as http://127.0.0.1:8080
     * @param string|null $token a Bearer token from auth.tokens
     * @param int $timeoutSeconds bounds each request; run() adds its max_seconds
     */
    public function __construct(
        private readonly string $baseUrl,
        private readonly ?string $token = null,
        private readonly int $timeoutSeconds = 30,
    ) {
        if (!preg_match('~^https?://~', $baseUrl)) {
            throw new ValidationException('baseUrl', 'want http://HOST:PORT or https://HOST:PORT');
        }
    }

    /**
     * POST /v1/jobs. The job is checked here first with the server's rules.
     *
     * @param array<string,mixed> $payload
     * @param array<string,mixed> $options as Client::enqueue's
     */
    public function enqueue(string $type, array|object $payload = [], array $options = []): EnqueueResult
    {
        $job = Rules::job($type, $payload, $options);
        $body = ['type' => $type, 'payload' => json_decode($job['payload'])];
        foreach ($job['options'] as $k => $v) {
            $body[$k] = match ($k) {
                'run_at', 'deadline' => $v->format('Y-m-d\TH:i:s.uP'),
                'delay', 'progress_timeout' => rtrim(rtrim(sprintf('%.3F', $v), '0'), '.') . 's',
                default => $v,
            };
        }
        $r = $this->call('POST', '/v1/jobs', $body);
        return new EnqueueResult((int) $r['id'], (bool) $r['duplicate']);
    }

    /** GET /v1/jobs/{id}: the job as the server shows it (status, attempts, last_error...). */
    public function job(int $id): array
    {
        return $this->call('GET', "/v1/jobs/$id");
    }

    /**
     * GET /v1/jobs/{id}/logs: the output kept of each of the job's attempts
     * (a command's stdout and stderr, first and last 32 KiB), oldest first,
     * or only that of $attempt.
     *
     * @return list<array{job_id:int,attempt:int,text:string,bytes:int,omitted:int,created_at:string}>
     */
    public function jobLogs(int $id, ?int $attempt = null): array
    {
        return $this->call('GET', "/v1/jobs/$id/logs" . ($attempt === null ? '' : "?attempt=$attempt"))['logs'];
    }

    /**
     * POST /v1/jobs/{id}/progress: a webhook receiver reports how far its
     * attempt is, with the attempt's progress token (Delivery::$progressToken,
     * the X-Sluice-Progress-Token header) in place of an API token, which it
     * need not hold. done and total must not be negative (total 0: unknown);
     * the message keeps its first 200 bytes. Answers ['written' => true], or
     * ['written' => false] when the server holds it for its next write (at
     * most one per job per second; a report with $done >= $total > 0 is
     * written at once, so send your last report as such before answering). A stale attempt's token is refused with
     * an ApiException of status 409: stop reporting then.
     *
     * @return array{written:bool}
     */
    public function progress(int $id, string $progressToken, int $done, int $total = 0, string $message = ''): array
    {
        return $this->call('POST', "/v1/jobs/$id/progress", ['done' => $done, 'total' => $total, 'message' => $message],
            0, $progressToken);
    }

    /**
     * POST /v1/jobs/{id}/cancel: a pending, failed or running job is
     * cancelled; a running one's handler is stopped within about a second
     * and what it reports afterwards is dropped.
     */
    public function cancel(int $id): array
    {
        return $this->call('POST', "/v1/jobs/$id/cancel");
    }

    /** POST /v1/jobs/{id}/retry: a failed or cancelled job runs again. */
    public function retry(int $id): array
    {
        return $this->call('POST', "/v1/jobs/$id/retry");
    }

    /**
     * POST /v1/run: one bounded cron pass; returns its counts (done,
     * retried, failed, requeued) or the skip.
     *
     * @param array{queue?:string,type?:string,max_jobs?:int,max_seconds?:int} $params
     */
    public function run(array $params = []): array
    {
        foreach (array_keys($params) as $k) {
            if (!in_array($k, ['queue', 'type', 'max_jobs', 'max_seconds'], true)) {
                throw new ValidationException((string) $k, 'unknown parameter; want queue, type, max_jobs or max_seconds');
            }
        }
        $extra = (int) ($params['max_seconds'] ?? 45);
        return $this->call('POST', '/v1/run' . ($params === [] ? '' : '?' . http_build_query($params)), null, $extra);
    }

    /** @return array<string,mixed> */
    private function call(string $method, string $path, ?array $body = null, int $extraSeconds = 0,
        ?string $progressToken = null): array
    {
        $ch = curl_init(rtrim($this->baseUrl, '/') . $path);
        $headers = ['Accept: application/json'];
        if ($progressToken !== null) {
            // An attempt's own token: the API token is not needed, and not sent.
            $headers[] = 'X-Sluice-Progress-Token: ' . $progressToken;
        } elseif ($this->token !== null && $this->token !== '') {
            $headers[] = 'Authorization: Bearer ' . $this->token;
        }
        $opts = [
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_RETURNTRANSFER => true,
            CURLOPT_TIMEOUT => $this->timeoutSeconds + $extraSeconds,
            CURLOPT_FOLLOWLOCATION => false,
        ];
        if ($body !== null) {
            $headers[] = 'Content-Type: application/json';
            $opts[CURLOPT_POSTFIELDS] = json_encode($body, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
        } elseif ($method === 'POST') {
            $opts[CURLOPT_POSTFIELDS] = '';
        }
        $opts[CURLOPT_HTTPHEADER] = $headers;
        curl_setopt_array($ch, $opts);
        $out = curl_exec($ch);
        if ($out === false) {
            $err = curl_error($ch);
            curl_close($ch);
            throw new ApiException(0, "$method $path: $err");
        }
        $status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
        curl_close($ch);
        $j = json_decode((string) $out, true);
        if ($status < 200 || $status > 299) {
            $msg = is_array($j) && isset($j['error']) ? $j['error'] : trim((string) $out);
            throw new ApiException($status, "$method $path: $status: $msg");
        }
        if (!is_array($j)) {
            throw new ApiException($status, "$method $path: the answer is not a JSON object: " . substr((string) $out, 0, 200));
        }
        return $j;
    }
}
