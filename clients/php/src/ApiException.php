<?php

declare(strict_types=1);

namespace Sluice;

/** The HTTP API refused a call (status 4xx/5xx) or could not be reached (status 0). */
final class ApiException extends \RuntimeException
{
    public function __construct(public readonly int $status, string $message)
    {
        parent::__construct($message);
    }
}
