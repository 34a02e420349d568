<?php

declare(strict_types=1);

namespace Sluice\Webhook;

/**
 * One webhook delivery of a job, as docs/http-api.md "Handler protocol" describes
 * it: the JSON body's fields and the protocol headers.
 */
final class Delivery
{
    /**
     * @param array<string,mixed> $payload
     */
    public function __construct(
        public readonly int $id,
        public readonly string $type,
        /** The business key, null when the job has none. */
        public readonly ?string $key,
        public readonly int $attempt,
        public readonly int $maxAttempts,
        public readonly array $payload,
        /** Names this job (not its key), the same on each of its retries: apply it once. */
        public readonly string $idempotencyKey,
        /** The W3C trace context of the job, null when it is not traced. */
        public readonly ?string $traceparent,
        /** The raw body, as signed. */
        public readonly string $body,
        /** The attempt's token for Api::progress, null when the request carried none. */
        public readonly ?string $progressToken = null,
    ) {
    }

    /** True on the job's last allowed attempt: a failure now is final. */
    public function isLastAttempt(): bool
    {
        return $this->attempt >= $this->maxAttempts;
    }
}
