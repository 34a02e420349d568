<?php

declare(strict_types=1);

namespace Sluice\Webhook;

/**
 * The answers sluice's webhook handler understands (docs/http-api.md "Handler
 * protocol"): 2xx is success and its body the job's result; 408, 425, 429 and
 * 5xx retry with backoff, Retry-After replacing it; any other 4xx fails the
 * job at once.
 */
final class Reply
{
    /** @param array<string,string> $headers */
    private function __construct(
        public readonly int $status,
        public readonly string $body,
        public readonly array $headers = ['Content-Type' => 'application/json'],
    ) {
    }

    /** Done; $result (JSON-encoded) becomes the job's result. */
    public static function done(mixed $result = ['ok' => true]): self
    {
        return new self(200, json_encode($result, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE));
    }

    /** Try again later: after $seconds when given, else after sluice's backoff. */
    public static function retry(string $error, ?int $seconds = null): self
    {
        $h = ['Content-Type' => 'application/json'];
        if ($seconds !== null) {
            $h['Retry-After'] = (string) max(0, $seconds);
        }
        return new self(503, json_encode(['error' => $error], JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE), $h);
    }

    /** Fail the job for good, without its remaining attempts (422 by default). */
    public static function fail(string $error, int $status = 422): self
    {
        if ($status < 400 || $status > 499 || in_array($status, [408, 425, 429], true)) {
            throw new \InvalidArgumentException("status $status: a permanent failure is a 4xx other than 408, 425 and 429");
        }
        return new self($status, json_encode(['error' => $error], JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE));
    }

    /** The answer to a request that is not sluice's (a bad signature): 401, which fails the job. */
    public static function unauthorized(string $error): self
    {
        return new self(401, json_encode(['error' => $error], JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE));
    }

    /** Sends the answer from plain PHP (FPM, php -S). */
    public function send(): void
    {
        http_response_code($this->status);
        foreach ($this->headers as $k => $v) {
            header("$k: $v");
        }
        echo $this->body;
    }
}
