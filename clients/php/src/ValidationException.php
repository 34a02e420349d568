<?php

declare(strict_types=1);

namespace Sluice;

/**
 * A job that sluice would refuse: the message starts with the field, as the
 * server's 400 answers do ("key: 200 characters, at most 191 allowed"), and
 * nothing was written.
 */
final class ValidationException extends \InvalidArgumentException
{
    public function __construct(public readonly string $field, string $problem)
    {
        parent::__construct($field === '' ? $problem : "$field: $problem");
    }
}
