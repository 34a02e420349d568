<?php

declare(strict_types=1);

namespace Sluice\Webhook;

/** A request whose X-Sluice-Signature does not check out: answer 401. */
final class SignatureException extends \RuntimeException
{
}
